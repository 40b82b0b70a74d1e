// A whole write planned over a closing transaction group's row (DESIGN §5 "Free last per group"):
// that group may still leave the row out (its chunk below the write quorum), so the version the
// write saw never goes live. The later group's commit replaces the committed version, not that one:
// it queues the committed version for reclaim, so no shard leaks, and never reclaims a shard a
// committed row names.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FaultyIo } from '../../store/io/faulty-io';
import { NodeIo } from '../../store/io/io';
import { Store } from '../../store/store';
import { SMALL, prng, randomBytes, smallStore } from './helpers';

const CS = SMALL.chunkSizeBytes;

/** A NodeIo whose directory flushes wait while held: a group's close stops there, its rows still pending. */
class HeldDirFlushes extends NodeIo {
  private holding: Promise<void> | null = null;
  private letGo: () => void = () => undefined;
  held = 0;
  hold(): void {
    this.holding = new Promise<void>((resolve) => (this.letGo = resolve));
  }
  release(): void {
    this.holding = null;
    this.letGo();
  }
  override async fsyncDir(p: string): Promise<void> {
    if (this.holding !== null) {
      this.held++;
      await this.holding;
    }
    return super.fsyncDir(p);
  }
}

/** The chunk-version directories ("{file}.v{version}/c{chunk}") of ino's shard files, on every disk. */
function versionDirs(dir: string, ino: number): string[] {
  const prefix = `${ino.toString(16).padStart(16, '0')}.v`;
  const out = new Set<string>();
  for (const d of fs.readdirSync(path.join(dir, 'disks'))) {
    for (const p of fs.readdirSync(path.join(dir, 'disks', d), { recursive: true }) as string[]) {
      const parts = p.split(path.sep);
      const n = parts.length;
      if (n >= 3 && parts[n - 3].startsWith(prefix) && parts[n - 1].endsWith('.shard'))
        out.add(`${parts[n - 3]}/${parts[n - 2]}`);
    }
  }
  return [...out].sort();
}

/** "{file}.v{version}/c{chunk}" of a shard path. */
function versionDirOf(shardPath: string): string {
  const parts = shardPath.split(path.sep);
  return `${parts[parts.length - 3]}/${parts[parts.length - 2]}`;
}

test('a whole write over a row its closing group leaves out: the committed version is reclaimed, nothing leaks', async (t) => {
  const { store, dir } = await smallStore('replica:3', 6);
  const ino = store.ns.create(1, 'f', 0o644, 0, 0).ino;
  await store.write(ino, 0, randomBytes(prng(1), CS)); // chunk 0 committed: v1
  const v1 = versionDirOf((await store.shardPath(ino, 0, 0))!);
  await store.close();

  const held = new HeldDirFlushes();
  const io = new FaultyIo(held);
  const s = await Store.open(dir, { io });
  const last = randomBytes(prng(3), CS);
  try {
    s.startGroups();
    await s.write(ino, 0, randomBytes(prng(2), CS)); // v2: in the open group, not flushed
    const v2 = versionDirOf((await s.shardPath(ino, 0, 0))!);
    t.not(v2, v1);
    // Every replica of v2 fails its flush, retries included: the group leaves its row out.
    io.addFault({ op: 'fdatasync', path: `${v2}${path.sep}`, error: 'EIO' });
    held.hold();
    const closing = s.sync(ino); // group 1 closes; it stops at its directory flushes, v2 still pending
    while (held.held === 0) await new Promise((r) => setImmediate(r));
    await s.write(ino, 0, last); // v3, in group 2, planned over v2 (group 1's row)
    const v3 = versionDirOf((await s.shardPath(ino, 0, 0))!);
    t.true(held.held > 0 && ![v1, v2].includes(v3), 'v3 was written while group 1 still held v2');
    held.release();
    const err = await t.throwsAsync(closing);
    t.regex(err!.message, /required shards flushed/, 'group 1 left v2 out');
    io.clearFaults();
    await s.sync(ino); // group 2 commits v3 over the committed v1
    t.true((await s.read(ino, 0, CS)).equals(last));
    await s.reclaimNow();
    t.deepEqual(versionDirs(dir, ino), [v3], 'v1 (replaced) and v2 (never live) are reclaimed; v3 stays');
    const scrub = await s.scrub();
    t.is(scrub.badCount, 0, 'every live shard verifies');
    t.deepEqual(scrub.leaks.paths, [], 'no shard left that nothing accounts for');
  } finally {
    held.release();
    await s.close();
  }
  const again = await Store.open(dir);
  try {
    t.true((await again.read(ino, 0, CS)).equals(last), 'v3 is live after reopen');
  } finally {
    await again.close();
  }
});
