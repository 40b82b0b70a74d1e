// Crash safety of write-back (DESIGN §5 prefix rule): the write-back buffer, with a small
// limit, driven by a sequential writer, a strided writer and a writer that seeks past the end, over a
// real store, with flush-timer firings at fixed points. Cut off
//   - by a process kill after every store write (every commit boundary the buffer causes): the
//     buffer is lost, every stored byte is kept;
//   - by a power loss before every device sync, unsynced bytes torn 4 KiB page by page.
// After reopening (recovery), the file must be a prefix of what was written (test/helpers/
// prefix-oracle.ts): size <= the size written, every bitrot block inside it old or new, never zeros
// over written data; and growing it afterwards reads zeros, never bytes stored past its size.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { WriteBack } from '../../fs/write-buffer';
import { OpenFile } from '../../fs/handles';
import type { StatfsBytes, StorePort } from '../../fs/store-port';
import { FaultyIo } from '../../store/io/faulty-io';
import { NodeIo } from '../../store/io/io';
import { ROOT_INO } from '../../store/meta/meta';
import { Store } from '../../store/store';
import { crashTestLog } from '../store/crash-harness';
import { PrefixOracle } from '../helpers/prefix-oracle';
import { memTmpDir, prng, randomBytes } from '../store/helpers';

const GEOMETRY = { chunkSizeBytes: 64 * 1024, bitrotBlockBytes: 4096, ecBlockSizeBytes: 16 * 1024 };
const CS = GEOMETRY.chunkSizeBytes;
/** 2.5 chunks: whole chunks stream out above half of it, writers wait for a flush above it. */
const BUFFER_BYTES = 160 * 1024;
/** The file exists before the writer starts: overwrites inside it may leave old blocks. */
const OLD_BYTES = 100 * 1024 + 1000;
/** The flush timer never fires by itself: writers fire it at fixed points (Op 'timer'). */
const NO_TIMER_MS = 1 << 30;

type Op = { kind: 'write'; offsetBytes: number; data: Buffer } | { kind: 'timer' };

/** Writes at which the sequential writer's flush timer fires: mid-chunk, so it stores part of a chunk. */
const SEQUENTIAL_TIMER_AFTER = new Set([6, 19, 27]);

/** Overwrites the old file and appends, in uneven pieces; the timer fires now and then. */
function sequentialWriter(): Op[] {
  const random = prng(11);
  const ops: Op[] = [];
  for (let at = 0, i = 0; at < 6 * CS + 5000; i++) {
    const len = [12 * 1024, 5000, 20 * 1024, 7 * 1024][i % 4];
    ops.push({ kind: 'write', offsetBytes: at, data: randomBytes(random, len) });
    at += len;
    if (SEQUENTIAL_TIMER_AFTER.has(i)) ops.push({ kind: 'timer' });
  }
  return ops;
}

/**
 * Records written out of order (even slots, then odd) inside a window of one chunk, like an async
 * engine; the timer fires early in the second window, storing part of that chunk.
 */
function stridedWriter(): Op[] {
  const random = prng(12);
  const recordBytes = CS / 8;
  const ops: Op[] = [];
  for (let window = 0; window < 3; window++) {
    for (const [i, slot] of [0, 2, 4, 6, 1, 3, 5, 7].entries()) {
      ops.push({
        kind: 'write',
        offsetBytes: (window * 8 + slot) * recordBytes,
        data: randomBytes(random, recordBytes),
      });
      if (window === 1 && i === 1) ops.push({ kind: 'timer' });
    }
  }
  return ops;
}

/** Writes, seeks far past the end and writes there, then fills part of the hole it left. */
function seekingWriter(): Op[] {
  const random = prng(13);
  const ops: Op[] = [];
  const piece = (offsetBytes: number, len: number): void => {
    ops.push({ kind: 'write', offsetBytes, data: randomBytes(random, len) });
  };
  for (let at = 0; at < 100 * 1024; at += 10 * 1024) piece(at, 10 * 1024);
  ops.push({ kind: 'timer' });
  for (let at = 3 * CS + 3000; at < 5 * CS; at += 16 * 1024) piece(at, 16 * 1024);
  for (let at = 100 * 1024; at < 2 * CS; at += 12 * 1024) piece(at, 12 * 1024);
  ops.push({ kind: 'timer' });
  piece(6 * CS, 4096); // past the end again
  return ops;
}

const WRITERS: Array<[string, () => Op[]]> = [
  ['sequential', sequentialWriter],
  ['strided', stridedWriter],
  ['seeking past the end', seekingWriter],
];

/**
 * The store as the write-back sees it, cut off like a killed process after `killAfter` store writes
 * have completed: every later call fails, so nothing more reaches the disks (what is buffered is
 * lost; what was stored stays). Counts the writes (killAfter Infinity: a counting run).
 */
class KillableStore implements StorePort {
  writes = 0;
  /** Every store write: where it started and the size it committed with it. */
  readonly log: Array<{ offsetBytes: number; sizeBytes: number | undefined }> = [];
  private killed = false;
  private readonly inflight = new Set<Promise<unknown>>();
  constructor(
    private readonly inner: Store,
    private readonly killAfter: number,
  ) {}

  get ns() {
    return this.inner.ns;
  }
  get defaultChunkSizeBytes() {
    return this.inner.defaultChunkSizeBytes;
  }
  get dead(): boolean {
    return this.killed;
  }
  get dir(): string {
    return this.inner.dir;
  }

  private call<T>(fn: () => Promise<T>, mutates: boolean): Promise<T> {
    if (this.killed) return Promise.reject(new Error('the process was killed'));
    const p = fn().then((v) => {
      if (mutates && ++this.writes >= this.killAfter) this.killed = true;
      return v;
    });
    this.inflight.add(p);
    const done = (): void => {
      this.inflight.delete(p);
    };
    p.then(done, done);
    return p;
  }

  /** Resolves when no call is in flight. */
  async quiet(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  read(ino: number, offsetBytes: number, lengthBytes: number): Promise<Buffer> {
    return this.call(() => this.inner.read(ino, offsetBytes, lengthBytes), false);
  }
  readInto(
    ino: number,
    offsetBytes: number,
    target: Buffer,
    targetOffset?: number,
    sizeBytes?: number,
  ): Promise<number> {
    return this.call(async () => this.inner.readInto(ino, offsetBytes, target, targetOffset, sizeBytes), false);
  }
  write(ino: number, offsetBytes: number, data: Uint8Array, sizeBytes?: number): Promise<void> {
    this.log.push({ offsetBytes, sizeBytes });
    return this.call(() => this.inner.write(ino, offsetBytes, data, sizeBytes), true);
  }
  truncate(ino: number, sizeBytes: number): Promise<void> {
    return this.call(() => this.inner.truncate(ino, sizeBytes), true);
  }
  deleteFile(ino: number): Promise<void> {
    return this.call(() => this.inner.deleteFile(ino), true);
  }
  pathOf(ino: number): string | null {
    return this.inner.pathOf(ino);
  }
  punchHole(
    ino: number,
    offsetBytes: number,
    lengthBytes: number,
  ): Promise<Array<{ offsetBytes: number; lengthBytes: number }>> {
    return this.call(() => this.inner.punchHole(ino, offsetBytes, lengthBytes), true);
  }
  statfs(): Promise<StatfsBytes> {
    return this.call(() => this.inner.statfs(), false);
  }
  sync(): Promise<void> {
    return this.call(() => this.inner.sync(), false);
  }
  commitStored(ino: number): Promise<void> {
    return this.call(() => this.inner.commitStored(ino), false);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** Drive a write-back buffer through the ops; the oracle learns every write it accepted. Returns at the end or at the kill. */
async function drive(
  port: KillableStore,
  ino: number,
  ops: Op[],
  oracle: PrefixOracle,
  oldBytes: number,
): Promise<void> {
  const wb = new WriteBack(port, {
    bufferBytesMax: BUFFER_BYTES,
    flushDelayMs: NO_TIMER_MS,
    chunkSizeBytes: CS,
    log: () => undefined,
  });
  const file = new OpenFile(ino, oldBytes);
  for (const op of ops) {
    if (port.dead) break;
    if (op.kind === 'timer') {
      void wb.flush(file).catch(() => undefined); // as the timer does: in the background
    } else {
      oracle.write(op.offsetBytes, op.data);
      const waiting = wb.write(file, op.offsetBytes, op.data, op.data.length);
      if (waiting !== undefined) await waiting;
    }
    // Deterministic: the flushes this op started (timer, whole chunks) end before the next op.
    await file.lock.exclusive(async () => undefined);
  }
  await wb.flush(file).catch(() => undefined); // close(2) (fails at once after a kill or a crash)
  await port.quiet();
  if (file.timer !== null) clearTimeout(file.timer);
}

/** A store holding the old file; copied for every crash. */
async function pristine(layout: string): Promise<{ dir: string; ino: number; old: Buffer }> {
  const dir = path.join(memTmpDir('chunkfs-wbcrash-'), 'store');
  const store = await Store.create(dir, { disks: 6, layout, ...GEOMETRY });
  const old = randomBytes(prng(3), OLD_BYTES);
  const ino = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0).ino;
  await store.write(ino, 0, old);
  await store.close();
  return { dir, ino, old };
}

/** A copy of a store, as it would be found after a reboot (SQLite's -shm and the lock file stay behind). */
function copyStore(dir: string): string {
  const to = path.join(memTmpDir('chunkfs-wbcrash-'), 'store');
  fs.cpSync(dir, to, { recursive: true, filter: (p) => !p.endsWith('-shm') && !p.endsWith('chunkfs.lock') });
  return to;
}

/**
 * Power loss of the metadata too: meta.db-wal goes back to its last full commit (FaultyIo
 * restoreExternal), which needs SQLite never to checkpoint on its own (a checkpoint syncs the WAL
 * behind the Io's back).
 */
async function openForPowerLoss(dir: string, io: FaultyIo): Promise<Store> {
  io.restoreExternal = true;
  const s = await Store.open(dir, { io, log: crashTestLog });
  (s as unknown as { db: import('../../store/meta/sqlite/engine').SqliteDb }).db.native.pragma(
    'wal_autocheckpoint = 0',
  );
  return s;
}

/** Reopen after the crash (recovery runs) and check the file against the oracle; '' when it holds. */
async function problems(dir: string, ino: number, oracle: PrefixOracle): Promise<string> {
  const s = await Store.open(dir);
  try {
    const size = s.ns.getattr(ino)!.sizeBytes;
    if (size > oracle.maxSizeBytes) return `size ${size} > ${oracle.maxSizeBytes} written`;
    const bad = oracle.unexplained(await s.read(ino, 0, size));
    if (bad.length > 0)
      return `size ${size}: ${bad.length} blocks neither old nor new, first at ${bad.slice(0, 4).join(', ')}`;
    // Growing the file now must show zeros, never chunk bytes stored past its size.
    const grownBytes = oracle.maxSizeBytes + CS;
    await s.truncate(ino, grownBytes);
    const tail = await s.read(ino, size, grownBytes - size);
    const firstNonZero = tail.findIndex((x) => x !== 0);
    if (firstNonZero >= 0) return `size ${size}: after growing, byte ${size + firstNonZero} is not zero`;
    return '';
  } finally {
    await s.close();
  }
}

for (const layout of ['replica:3', 'ec:4+2']) {
  for (const [name, writer] of WRITERS) {
    test(`process kill after every store write: ${name} writer, ${layout}`, async (t) => {
      const { dir, ino, old } = await pristine(layout);
      const ops = writer();
      const counting = new KillableStore(await Store.open(copyStore(dir), { log: crashTestLog }), Infinity);
      const full = new PrefixOracle(GEOMETRY.bitrotBlockBytes, old);
      await drive(counting, ino, ops, full, old.length);
      await counting.close();
      t.true(counting.writes >= 4, `the writer causes several store writes (${counting.writes})`);
      const whole = await Store.open(counting.dir);
      t.true(
        (await whole.read(ino, 0, full.maxSizeBytes + 1)).equals(full.current),
        'without a crash, everything is stored',
      );
      await whole.close();
      for (let k = 1; k <= counting.writes; k++) {
        const copy = copyStore(dir);
        const port = new KillableStore(await Store.open(copy, { log: crashTestLog }), k);
        const oracle = new PrefixOracle(GEOMETRY.bitrotBlockBytes, old);
        await drive(port, ino, ops, oracle, old.length);
        await port.close();
        t.is(await problems(copy, ino, oracle), '', `killed after store write ${k} of ${counting.writes}`);
        fs.rmSync(path.dirname(copy), { recursive: true, force: true });
      }
    });

    test(`power loss before every device sync, torn: ${name} writer, ${layout}`, async (t) => {
      const { dir, ino, old } = await pristine(layout);
      const ops = writer();
      const countIo = new FaultyIo(new NodeIo());
      const counting = new KillableStore(await openForPowerLoss(copyStore(dir), countIo), Infinity);
      const base = countIo.syncCount;
      await drive(counting, ino, ops, new PrefixOracle(GEOMETRY.bitrotBlockBytes, old), old.length);
      await counting.close();
      const syncs = countIo.syncCount - base;
      t.true(syncs > 20, `the writer causes device syncs (${syncs})`);
      for (let n = 1; n <= syncs; n++) {
        const live = copyStore(dir);
        const io = new FaultyIo(new NodeIo());
        const s = await openForPowerLoss(live, io);
        io.crashBeforeSync(io.syncCount + n, { torn: true, seed: n });
        const oracle = new PrefixOracle(GEOMETRY.bitrotBlockBytes, old);
        await drive(new KillableStore(s, Infinity), ino, ops, oracle, old.length);
        await io.whenRestored();
        const rebooted = copyStore(live); // before close: SQLite's close would checkpoint what it still holds
        await s.close();
        t.is(await problems(rebooted, ino, oracle), '', `power loss before sync ${n} of ${syncs}`);
        for (const d of [live, rebooted]) fs.rmSync(path.dirname(d), { recursive: true, force: true });
      }
    });
  }
}

test('no stragglers: a sequential writer never leaves a chunk in memory while later ones are stored', async (t) => {
  const { dir, ino, old } = await pristine('replica:3');
  const port = new KillableStore(await Store.open(copyStore(dir), { log: crashTestLog }), Infinity);
  await drive(port, ino, sequentialWriter(), new PrefixOracle(GEOMETRY.bitrotBlockBytes, old), old.length);
  await port.close();
  // A chunk whose first part the timer stored is completed with the whole chunks after it, so each
  // store write commits a size that reaches at least its own start (nothing before it left behind).
  const behind = port.log.filter((w) => w.sizeBytes === undefined || w.sizeBytes < w.offsetBytes);
  t.deepEqual(behind, [], `store writes: ${JSON.stringify(port.log)}`);
  t.true(port.log.length >= 4);
});
