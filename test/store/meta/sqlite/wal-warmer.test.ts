// store/meta/sqlite/wal-warmer.ts: a slow commit reads meta.db-wal back into the page cache, at most once
// per interval; fast commits read nothing; the SQLite engine times outermost transactions only.
import test from 'ava';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { NodeIo } from '../../../../store/io/io';
import { WalWarmer } from '../../../../store/meta/sqlite/wal-warmer';
import { createDb } from '../../../../store/meta/sqlite/database';
import { SqliteWalCommitPoint } from '../../../../store/meta/sqlite/commit-point';

const SLOW_NS = 10_000_000n;
const FAST_NS = 50_000n;

function tempDir(t: { teardown: (fn: () => void) => void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chunkfs-walwarm-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('a slow commit reads the whole WAL once per interval; fast ones read nothing', async (t) => {
  const dir = tempDir(t);
  const wal = path.join(dir, 'meta.db-wal');
  const sizeBytes = 3 * (1 << 20) + 4120 * 7; // not a whole number of read pieces
  fs.writeFileSync(wal, Buffer.alloc(sizeBytes, 7));
  let nowMs = 1_000;
  const warmer = new WalWarmer(new NodeIo(), wal, { coldCommitNs: 1_000_000n, warmIntervalMs: 1000, now: () => nowMs });
  warmer.observe(FAST_NS);
  await warmer.idle();
  t.is(warmer.warmCount, 0, 'a commit of usual speed starts no read');
  warmer.observe(SLOW_NS);
  await warmer.idle();
  t.is(warmer.warmCount, 1);
  t.is(warmer.warmedBytes, sizeBytes, 'the whole WAL was read');
  nowMs += 500;
  warmer.observe(SLOW_NS);
  await warmer.idle();
  t.is(warmer.warmCount, 1, 'within the interval: no second read');
  nowMs += 600;
  warmer.observe(SLOW_NS);
  await warmer.idle();
  t.is(warmer.warmCount, 2, 'after the interval: read again');
  t.is(warmer.warmedBytes, 2 * sizeBytes);
});

test('a missing WAL (no commit since a checkpoint removed it) is no error', async (t) => {
  const dir = tempDir(t);
  const warmer = new WalWarmer(new NodeIo(), path.join(dir, 'meta.db-wal'), { coldCommitNs: 1n });
  warmer.observe(SLOW_NS);
  await warmer.idle();
  t.is(warmer.warmCount, 1);
  t.is(warmer.warmedBytes, 0);
});

test("the SQLite engine reports each outermost transaction to the commit point's warmer, savepoints not", async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'meta.db');
  const db = createDb(file, crypto.randomUUID());
  t.teardown(() => db.close());
  const point = new SqliteWalCommitPoint(db, new NodeIo(), `${file}-wal`);
  t.is(db.commitObserver, point.warmer.observe, "the commit point watches the engine's commits");
  const seen: bigint[] = [];
  db.commitObserver = (ns) => {
    seen.push(ns);
  };
  const insert = db.prepare(
    'INSERT INTO counters(name, value) VALUES (?, 1) ON CONFLICT(name) DO UPDATE SET value = value + 1',
  );
  const inner = db.transaction(() => insert.run('inner'));
  db.transaction(() => {
    insert.run('outer');
    inner();
  })();
  inner();
  t.is(seen.length, 2, 'one report per outermost transaction');
  t.true(seen.every((ns) => ns > 0n));
});
