// Free last through a real mount (DESIGN §5): `rm -rf` of fsync'd files, with the mount
// process traced by strace (unlink, unlinkat, fsync, fdatasync, with fd paths) and rm traced too.
// No shard file of a removed file may be deleted before a flush of the metadata WAL that started
// after rm's unlink of that file: until then a power loss can bring the file back, and its shards
// must be there. On the old reclaimer the shards went within ~100 ms, the WAL flush up to 5 s later.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChildProcess, spawnSync } from 'node:child_process';
import { storeFixture, run, PYTHON, reclaimDrained } from '../helpers/mount';
import { straceAttach, straceDetach, straceEvents } from '../helpers/strace';

let tracer: ChildProcess | undefined;
const FILES = 120;

const fixture = storeFixture(test, 'reclaim-order', {
  beforeStop: () => {
    if (tracer !== undefined && tracer.exitCode === null) tracer.kill('SIGINT');
  },
});

const drained = reclaimDrained;

const MAKE = `
import os, random, sys
root = sys.argv[1]
os.makedirs(root)
for i in range(int(sys.argv[2])):
    p = os.path.join(root, 'f%03d' % i)
    with open(p, 'wb') as f:
        # Past small_file_max (64 KiB): chunk shards of their own, not needles in a container.
        f.write(random.Random(i).randbytes(70_000 + i * 500))
        f.flush(); os.fsync(f.fileno())
    print(os.stat(p).st_ino, 'f%03d' % i)
`;

test.serial(
  'rm -rf: no shard of an unlinked file is deleted before a WAL flush that follows the unlink (strace)',
  async (t) => {
    t.is(spawnSync('strace', ['-V']).status, 0, 'strace is needed (scripts/setup-test.sh installs it)');
    const store = fixture.store;
    const m = await fixture.mount();
    const tree = path.join(m.mountpoint, 'tree');
    const made = await run(PYTHON, ['-c', MAKE, tree, String(FILES)], { timeoutMs: 300_000 });
    t.is(made.code, 0, made.stderr);
    const nameOfIno = new Map(
      made.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(' '))
        .map(([ino, name]) => [BigInt(ino), name]),
    );
    const mountTrace = path.join(fixture.dir, 'mount.trace');
    const rmTrace = path.join(fixture.dir, 'rm.trace');
    tracer = await straceAttach(m.child.pid!, mountTrace, 'unlink,unlinkat,fsync,fdatasync');
    const rm = await run('strace', ['-f', '-ttt', '-e', 'trace=unlinkat,unlink', '-o', rmTrace, 'rm', '-rf', tree], {
      timeoutMs: 300_000,
    });
    t.is(rm.code, 0, rm.stderr);
    t.is(await drained(store), 0, 'the reclaim queue drains');
    await straceDetach(tracer); // the mount goes on
    await m.stop();

    // When rm asked to unlink each file (the mount commits the unlink while rm waits for the reply).
    const unlinkedAt = new Map<string, number>();
    for (const e of straceEvents(rmTrace)) {
      const mm = /^unlinkat\(\w+, "(f\d{3})", 0\)/.exec(e.line);
      if (mm !== null) unlinkedAt.set(mm[1], e.t);
    }
    t.is(unlinkedAt.size, FILES, 'rm unlinked every file');
    const mountEvents = straceEvents(mountTrace);
    const walFlushes = mountEvents.filter((e) => /^f(data)?sync\(\d+<[^>]*meta\.db-wal>/.test(e.line)).map((e) => e.t);
    const shardDeletes = mountEvents.flatMap((e) => {
      const mm = /^unlink(?:at)?\(.*\/([0-9a-f]{16})\.v\d+\/c\d+\/\d+\.shard"/.exec(e.line);
      return mm === null ? [] : [{ t: e.t, ino: BigInt('0x' + mm[1]) }];
    });
    t.true(
      shardDeletes.length >= FILES * 3,
      `every replica of every file deleted (${shardDeletes.length} shard unlinks traced)`,
    );
    const early: string[] = [];
    for (const d of shardDeletes) {
      const name = nameOfIno.get(d.ino);
      if (name === undefined) {
        early.push(`a shard of inode ${d.ino}, not one of the files`);
        continue;
      }
      const since = unlinkedAt.get(name)!;
      if (!walFlushes.some((f) => f > since && f < d.t))
        early.push(`${name}: shard deleted ${(d.t - since).toFixed(3)} s after its unlink, no WAL flush between`);
    }
    t.log(
      `${walFlushes.length} WAL flushes while ${FILES} files were removed and ${shardDeletes.length} shard files deleted`,
    );
    t.deepEqual(
      early.slice(0, 5),
      [],
      `${early.length} of ${shardDeletes.length} shard deletes came before their unlink was durable`,
    );
  },
);
