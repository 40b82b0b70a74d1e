// Scrub's leak scan (store/upkeep/leak-scan.ts, DESIGN §4 "Identity"): shard and temp files nothing
// accounts for are found; only those the metadata proves freed are removable, and they are moved to
// the quarantine, never deleted; a file of a version the metadata never handed out is reported and
// left; a scan that would remove more than LEAK_SHARE_MAX of the shard files refuses unless forced.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { shardRelPath } from '../../../src/path';
import { scanLeaks } from '../../../store/upkeep/leak-scan';
import { FileFixture, fileFixture } from './fixture';

const GRACE_MS = 7 * 86_400_000;

/** A copy of chunk c's live shard i under another version's path; returns that path. */
function strayShard(f: FileFixture, c: number, i: number, version: bigint): string {
  const ref = f.ref(c);
  const root = f.store.diskPaths().get(ref.diskIds[i])!;
  const to = path.join(root, shardRelPath(ref.fileId, version, BigInt(c), i));
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.copyFileSync(f.env.shards.path(ref, i), to);
  return to;
}

test('a freed version is leaked and quarantined; a version never handed out is unknown and stays', async (t) => {
  const f = await fileFixture('replica:3', 20);
  const old = f.ref(0).version;
  await f.store.write(f.ino, 0, f.data.subarray(0, 256 * 1024)); // a whole rewrite: a new version
  await f.store.reclaimNow(); // the old one deleted and dequeued
  const freed = strayShard(f, 0, 0, old); // below max_version, not live, not queued: proved freed
  const never = strayShard(f, 1, 0, 99n); // above max_version: the metadata never made it
  const temp = f.env.shards.path(f.ref(2), 1) + '.tmp.0123456789abcdef';
  fs.writeFileSync(temp, 'cut off'); // a temp of the live version, no write in flight
  const seen = await scanLeaks(f.env, f.roots(), { repair: false, graceMs: GRACE_MS });
  t.like(seen, { leakedShards: 1, leakedTemps: 1, unknown: 1, removed: 0, shardFiles: 20 * 3 + 3 });
  t.deepEqual(seen.unknownPaths, [never]);
  t.deepEqual([...seen.paths].sort(), [freed, never, temp].sort());
  const nowMs = Date.UTC(2026, 11, 7, 9, 0, 0);
  const fixed = await scanLeaks(f.env, f.roots(), { repair: true, graceMs: GRACE_MS, nowMs });
  t.is(fixed.removed, 2);
  t.is(fixed.quarantine, '.chunks-quarantine/20261207T090000Z');
  t.false(fs.existsSync(freed) || fs.existsSync(temp), 'moved away');
  t.true(fs.existsSync(never), 'the unknown file is left');
  const root = f.store.diskPaths().get(f.ref(0).diskIds[0])!;
  t.true(fs.existsSync(path.join(root, fixed.quarantine!, path.relative(root, freed))), 'kept in the quarantine');
  t.true((await f.store.read(f.ino, 0, f.data.length)).equals(f.data), 'live data untouched');
  await f.store.close();
});

test('more than LEAK_SHARE_MAX of the shard files removable: refused, naming the share, unless forced', async (t) => {
  const f = await fileFixture('replica:3', 1);
  const old = f.ref(0).version;
  await f.store.write(f.ino, 0, f.data);
  await f.store.reclaimNow();
  const stray = strayShard(f, 0, 2, old);
  const refused = await scanLeaks(f.env, f.roots(), { repair: true, graceMs: GRACE_MS });
  t.is(refused.removed, 0);
  t.regex(refused.refused ?? '', /would remove 1 of 4 shard files \(25\.0%\).*--force/);
  t.true(fs.existsSync(stray), 'nothing removed');
  const forced = await scanLeaks(f.env, f.roots(), { repair: true, force: true, graceMs: GRACE_MS });
  t.is(forced.removed, 1);
  t.false(fs.existsSync(stray));
  await f.store.close();
});

test('a scan whose write gate is closed (a lost lease) moves nothing', async (t) => {
  const f = await fileFixture('replica:3', 1);
  const old = f.ref(0).version;
  await f.store.write(f.ino, 0, f.data);
  await f.store.reclaimNow();
  const stray = strayShard(f, 0, 1, old);
  f.env.shards.writeGate = () => {
    throw new Error('lease lost');
  };
  await t.throwsAsync(scanLeaks(f.env, f.roots(), { repair: true, force: true, graceMs: GRACE_MS }), {
    message: 'lease lost',
  });
  t.true(fs.existsSync(stray));
  f.env.shards.writeGate = () => undefined;
  await f.store.close();
});
