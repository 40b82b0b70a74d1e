// store/upkeep/quarantine.ts (DESIGN §4 "Identity"): a file the leak scan removes is moved under
// <disk>/.chunks-quarantine/<stamp>/ with its path below the disk kept, durably (its directory
// fsync'd); run folders older than the grace period are deleted, younger ones and names that are no
// run's stamp are left alone. Through a FaultyIo: a move whose rename fails leaves the file in place.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FaultyIo } from '../../../store/io/faulty-io';
import { NodeIo } from '../../../store/io/io';
import {
  QUARANTINE_DIR,
  Quarantine,
  emptyExpiredQuarantine,
  graceMsOf,
  quarantineStamp,
} from '../../../store/upkeep/quarantine';
import { tmpDir } from '../helpers';

const DAY_MS = 86_400_000;
const REL = '.chunks/ab/cd/0000000000000007.v3/c0/1.shard';

function disk(): string {
  const root = tmpDir('chunkfs-quarantine-');
  fs.mkdirSync(path.join(root, path.dirname(REL)), { recursive: true });
  fs.writeFileSync(path.join(root, REL), 'shard bytes');
  return root;
}

test("the stamp is the run's UTC start, sortable, with no colon", (t) => {
  t.is(quarantineStamp(Date.UTC(2026, 11, 7, 5, 53, 0, 456)), '20261207T055300Z');
  t.is(graceMsOf(undefined), 7 * DAY_MS, 'seven days by default');
  t.is(graceMsOf(2), 2 * DAY_MS);
});

test('a move keeps the path below the disk, on the same disk, and flushes its directory', async (t) => {
  const root = disk();
  const io = new FaultyIo(new NodeIo());
  const now = Date.UTC(2026, 11, 7, 5, 53, 0);
  const q = new Quarantine(io, now);
  const to = await q.move(root, REL);
  t.is(to, path.join(root, QUARANTINE_DIR, '20261207T055300Z', REL));
  t.is(fs.readFileSync(to, 'utf8'), 'shard bytes');
  t.false(fs.existsSync(path.join(root, REL)), 'gone from where it was');
  t.true((io.calls.get('fsyncDir') ?? 0) >= 1, 'the new entry made durable');
});

test('a move whose rename fails leaves the file where it was', async (t) => {
  const root = disk();
  const io = new FaultyIo(new NodeIo());
  io.addFault({ op: 'rename', error: 'EIO' });
  await t.throwsAsync(new Quarantine(io, Date.now()).move(root, REL), { message: /EIO/ });
  t.is(fs.readFileSync(path.join(root, REL), 'utf8'), 'shard bytes');
});

test('only run folders past the grace period are emptied; other names are not ours', async (t) => {
  const roots = [disk(), disk()];
  const io = new NodeIo();
  const now = Date.UTC(2026, 11, 10, 0, 0, 0);
  const old = new Quarantine(io, now - 8 * DAY_MS);
  const young = new Quarantine(io, now - 6 * DAY_MS);
  await old.move(roots[0], REL);
  fs.mkdirSync(path.join(roots[1], path.dirname(REL)), { recursive: true });
  fs.writeFileSync(path.join(roots[1], REL + '.2'), 'another');
  await old.move(roots[1], REL);
  await old.move(roots[1], REL + '.2');
  fs.writeFileSync(path.join(roots[0], REL), 'again');
  await young.move(roots[0], REL);
  const foreign = path.join(roots[0], QUARANTINE_DIR, 'keep-me');
  fs.mkdirSync(foreign);
  fs.writeFileSync(path.join(foreign, 'x'), 'x');
  t.is(await emptyExpiredQuarantine(io, roots, now, graceMsOf(7)), 3, 'three files of the old run');
  t.deepEqual(fs.readdirSync(path.join(roots[0], QUARANTINE_DIR)).sort(), [young.stamp, 'keep-me'].sort());
  t.deepEqual(fs.readdirSync(path.join(roots[1], QUARANTINE_DIR)), []);
  t.is(await emptyExpiredQuarantine(io, roots, now + 2 * DAY_MS, graceMsOf(7)), 1, 'the young run in its turn');
  t.true(fs.existsSync(path.join(foreign, 'x')));
});
