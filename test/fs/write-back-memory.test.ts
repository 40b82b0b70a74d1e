// The write-back buffer's memory bound (fs/write-buffer.ts, fs/flush-lanes.ts; DESIGN §5): bytes
// being stored and the flush lanes count against it, a writer at the bound waits, and it goes on as
// soon as a window of a running flush is stored (not when the whole flush ends). Also: the lane
// buffer joins and merges a window's chunks without mixing them up.
import test from 'ava';
import { WriteBack } from '../../fs/write-buffer';
import { OpenFile } from '../../fs/handles';
import type { StorePort } from '../../fs/store-port';

const MIB = 1 << 20;
const CS = MIB;
const WRITE_BYTES = 128 << 10;

/** An in-memory store whose writes wait until the test lets them through, one at a time or all. */
class StepStore {
  readonly files = new Map<number, Buffer>();
  private readonly held: Array<() => void> = [];
  holding = false;
  writes = 0;
  pathOf(): string | null {
    return null;
  }
  readonly ns = { getattr: (ino: number) => ({ ino, mtimeNs: 1_000n, ctimeNs: 2_000n }) };

  get pending(): number {
    return this.held.length;
  }
  /** Let the oldest held write through. */
  step(): void {
    this.held.shift()?.();
  }
  open(): void {
    this.holding = false;
    while (this.held.length > 0) this.step();
  }

  async write(ino: number, offsetBytes: number, data: Uint8Array): Promise<void> {
    this.writes++;
    if (this.holding) await new Promise<void>((resolve) => this.held.push(resolve));
    const f = this.files.get(ino) ?? Buffer.alloc(0);
    const end = offsetBytes + data.length;
    const grown = f.length < end ? Buffer.concat([f, Buffer.alloc(end - f.length)]) : f;
    grown.set(data, offsetBytes);
    this.files.set(ino, grown);
  }

  async readInto(ino: number, offsetBytes: number, target: Buffer, targetOffset = 0): Promise<number> {
    const f = this.files.get(ino);
    if (f === undefined || offsetBytes >= f.length) return 0;
    const n = Math.max(0, Math.min(target.length - targetOffset, f.length - offsetBytes));
    f.copy(target, targetOffset, offsetBytes, offsetBytes + n);
    return n;
  }

  async truncate(): Promise<void> {
    throw new Error('not used');
  }
}

function newWriteBack(store: StepStore, bufferBytesMax: number): WriteBack {
  return new WriteBack(store as unknown as StorePort, {
    bufferBytesMax,
    flushDelayMs: 3_600_000,
    chunkSizeBytes: CS,
    log: () => undefined,
  });
}

function pattern(seed: number, lengthBytes: number): Buffer {
  const b = Buffer.alloc(lengthBytes);
  for (let i = 0; i < lengthBytes; i += 4) b.writeUInt32LE((seed * 2654435761 + i) >>> 0, i);
  return b;
}

/** Write [0, bytes) of the file in WRITE_BYTES pieces (a sequential writer: every window needs the lane). */
function writeSequential(wb: WriteBack, file: OpenFile, bytes: number, seed: number): void {
  for (let off = 0; off < bytes; off += WRITE_BYTES) {
    const r = wb.write(file, off, pattern(seed + off, WRITE_BYTES), WRITE_BYTES);
    if (r !== undefined) throw new Error(`write at ${off} waited: the test sized the buffer to hold it`);
  }
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((resolve) => setTimeout(resolve, 1));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

function stopTimer(file: OpenFile): void {
  if (file.timer !== null) clearTimeout(file.timer);
  file.timer = null;
}

test('bytes being stored and the flush lane count against the bound: a writer at the bound waits until a window is stored', async (t) => {
  const store = new StepStore();
  const wb = newWriteBack(store, 32 * MIB); // 2 MiB slabs, one 8 MiB lane (8 chunks of 1 MiB: a quarter of the bound)
  const a = new OpenFile(1, 0);
  const b = new OpenFile(2, 0);
  writeSequential(wb, a, 24 * MIB, 1);
  t.is(wb.heldBytes, 24 * MIB);
  store.holding = true;
  const flushed = wb.flush(a);
  await until(() => store.pending === 1, 'the flush to reach the store');
  t.is(wb.bufferedBytes, 0, 'the flush took every buffered byte');
  t.is(wb.heldBytes, 32 * MIB, 'the 24 MiB being stored and the 8 MiB lane they are joined in are held: the bound');
  const waiting = wb.write(b, 0, pattern(2, WRITE_BYTES), WRITE_BYTES);
  t.true(waiting instanceof Promise, 'a write past the bound waits');
  let accepted = false;
  void waiting!.then(() => {
    accepted = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.false(accepted, 'it still waits while the bytes are being stored');
  store.open();
  await flushed;
  await waiting;
  t.true(accepted);
  t.is(wb.heldBytes, 8 * MIB + 2 * MIB, 'the lane stays for reuse; one slab holds the new write');
  t.true(
    store.files
      .get(1)!
      .equals(Buffer.concat(Array.from({ length: 192 }, (_, k) => pattern(1 + k * WRITE_BYTES, WRITE_BYTES)))),
  );
  await wb.flush(b);
  stopTimer(a);
  stopTimer(b);
});

test('a writer waiting at the bound goes on when the first window of a running flush is stored, before the flush ends', async (t) => {
  const store = new StepStore();
  const wb = newWriteBack(store, 40 * MIB); // 2 MiB slabs, one 8 MiB lane
  const a = new OpenFile(1, 0);
  const b = new OpenFile(2, 0);
  writeSequential(wb, a, 24 * MIB, 1); // three windows of 8 chunks
  store.holding = true;
  const flushed = wb.flush(a);
  await until(() => store.pending === 1, 'the first window to reach the store');
  t.is(wb.heldBytes, 32 * MIB, '24 MiB being stored and the lane');
  let blocked: Promise<void> | undefined;
  let off = 0;
  for (; off < 16 * MIB && blocked === undefined; off += WRITE_BYTES)
    blocked = wb.write(b, off, pattern(3 + off, WRITE_BYTES), WRITE_BYTES);
  t.true(blocked instanceof Promise, 'the writer reached the bound');
  // 8 MiB are left under the bound, counted in whole 2 MiB slabs: the write that opens the fourth
  // slab fills the bound, and the next one waits.
  t.is(off, 6 * MIB + 2 * WRITE_BYTES, 'after the slabs left under the bound');
  let accepted = false;
  void blocked!.then(() => {
    accepted = true;
  });
  store.step(); // the first window is stored; two more are still to come
  await until(() => accepted, 'the waiting write to be accepted');
  t.true(store.pending > 0 || store.writes < 3, 'the flush has windows left to store');
  store.open();
  await flushed;
  await wb.flush(b);
  stopTimer(a);
  stopTimer(b);
  t.is(store.files.get(1)!.length, 24 * MIB);
  t.is(store.files.get(2)!.length, off);
});

test('a window of merged scattered chunks beside joined sequential ones stores every byte in its place', async (t) => {
  const store = new StepStore();
  const wb = newWriteBack(store, 64 * MIB);
  const file = new OpenFile(1, 0);
  const model = Buffer.alloc(12 * CS);
  // Chunks 0-3 sequential (joined in the lane), chunks 4-6 scattered 4 KiB writes (merged in the
  // lane), chunk 9 alone (not adjacent), then chunks 10-11 scattered: 12 chunks, two windows.
  const put = (off: number, data: Buffer): void => {
    const r = wb.write(file, off, data, data.length);
    t.is(r, undefined);
    data.copy(model, off);
  };
  for (let off = 0; off < 4 * CS; off += WRITE_BYTES) put(off, pattern(off, WRITE_BYTES));
  for (const c of [4, 5, 6, 10, 11])
    for (let k = 0; k < 40; k++) put(c * CS + ((k * 7919) % 256) * 4096, pattern(c * 1000 + k, 4096));
  put(9 * CS + 5000, pattern(9, 3000));
  await wb.flush(file);
  stopTimer(file);
  const stored = store.files.get(1)!;
  t.is(stored.length, file.sizeBytes, 'stored up to the last written byte');
  t.true(
    stored.equals(model.subarray(0, stored.length)),
    'the stored bytes are the written ones, each chunk in its place',
  );
});
