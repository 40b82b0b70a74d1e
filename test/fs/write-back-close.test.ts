// The write-back buffer against an in-memory store (fs/write-buffer.ts): tiny appends grow one
// extent, close stores small files in one background batch (DESIGN §5 "How data is written": one
// container append for many files), a failed background flush (or what a transaction group could
// not keep) is reported by the next fsync/close, and an mtime set while bytes are buffered is the
// one committed with them.
import test from 'ava';
import { WriteBack } from '../../fs/write-buffer';
import { OpenFile } from '../../fs/handles';
import type { StorePort } from '../../fs/store-port';

const CS = 1 << 20;

interface Stored {
  bytes: Buffer;
  sizeBytes: number;
  mtimeNs: bigint | undefined;
  ctimeNs: bigint | undefined;
}

/** The part of a store the write-back buffer uses; gate() holds every write until released. */
class MemStore {
  readonly files = new Map<number, Stored>();
  inFlight = 0;
  maxInFlight = 0;
  writes = 0;
  failIno = -1;
  /** What a transaction group's close could not keep, by inode (StorePort.takeWriteError). */
  readonly groupErrors = new Map<number, Error>();
  takeWriteError(ino: number): Error | null {
    const err = this.groupErrors.get(ino) ?? null;
    this.groupErrors.delete(ino);
    return err;
  }
  private gateOpen: Promise<void> = Promise.resolve();
  private openGate: () => void = () => undefined;
  pathOf(): string | null {
    return null;
  }
  /** The rows' times, as the namespace would hold them (the write-back reads them to commit the shown times). */
  readonly ns = { getattr: (ino: number) => ({ ino, mtimeNs: 1_000n, ctimeNs: 2_000n }) };

  gate(): void {
    this.gateOpen = new Promise((resolve) => {
      this.openGate = resolve;
    });
  }
  release(): void {
    this.openGate();
  }

  async write(
    ino: number,
    offsetBytes: number,
    data: Uint8Array,
    sizeBytes?: number,
    times?: { mtimeNs: bigint; ctimeNs: bigint },
  ): Promise<void> {
    this.writes++;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await this.gateOpen;
      if (ino === this.failIno) throw new Error(`injected: write of inode ${ino} failed`);
      const f = this.files.get(ino) ?? { bytes: Buffer.alloc(0), sizeBytes: 0, mtimeNs: undefined, ctimeNs: undefined };
      const end = offsetBytes + data.length;
      if (f.bytes.length < end) f.bytes = Buffer.concat([f.bytes, Buffer.alloc(end - f.bytes.length)]);
      f.bytes.set(data, offsetBytes);
      f.sizeBytes = Math.max(f.sizeBytes, sizeBytes ?? end);
      f.mtimeNs = times?.mtimeNs;
      f.ctimeNs = times?.ctimeNs;
      this.files.set(ino, f);
    } finally {
      this.inFlight--;
    }
  }

  async readInto(
    ino: number,
    offsetBytes: number,
    target: Buffer,
    targetOffset = 0,
    sizeBytes?: number,
  ): Promise<number> {
    const f = this.files.get(ino);
    if (f === undefined) return 0;
    const end = Math.min(f.bytes.length, sizeBytes ?? f.sizeBytes);
    const n = Math.max(0, Math.min(target.length - targetOffset, end - offsetBytes));
    f.bytes.copy(target, targetOffset, offsetBytes, offsetBytes + n);
    return n;
  }

  async truncate(): Promise<void> {
    throw new Error('not used');
  }
}

function newWriteBack(store: MemStore, flushDelayMs = 3_600_000): WriteBack {
  return new WriteBack(store as unknown as StorePort, {
    bufferBytesMax: 64 << 20,
    flushDelayMs,
    chunkSizeBytes: CS,
    log: () => undefined,
  });
}

function record(i: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(i >>> 0);
  return b;
}

function stopTimer(file: OpenFile): void {
  if (file.timer !== null) clearTimeout(file.timer);
  file.timer = null;
}

test('100,000 4-byte appends hold one extent of exactly their bytes, read back and store exact', async (t) => {
  const store = new MemStore();
  const wb = newWriteBack(store);
  const file = new OpenFile(1, 0);
  const n = 100_000;
  for (let i = 0; i < n; i++) t.is(wb.write(file, 4 * i, record(i), 4), undefined);
  t.is(file.buffer.count, 1, 'one extent grown in place, not one per append');
  t.is(wb.bufferedBytes, 4 * n);
  const want = Buffer.concat(Array.from({ length: n }, (_, i) => record(i)));
  const got = Buffer.alloc(4 * n);
  t.is(await wb.readInto(file, 0, got, 4 * n), 4 * n);
  t.true(got.equals(want), 'reads see every append in order');
  await wb.flush(file);
  stopTimer(file);
  t.true(store.files.get(1)!.bytes.equals(want), 'the store holds exactly the appended bytes');
  t.is(store.files.get(1)!.sizeBytes, 4 * n);
  t.is(wb.bufferedBytes, 0);
});

test('appends interleaved over two files, and appends after a flush took the extent, stay exact', async (t) => {
  const store = new MemStore();
  const wb = newWriteBack(store);
  const a = new OpenFile(1, 0);
  const b = new OpenFile(2, 0);
  const n = 20_000;
  for (let i = 0; i < n; i++) {
    wb.write(a, 4 * i, record(i), 4);
    if (i % 3 === 0) wb.write(b, 4 * (i / 3), record(~i), 4); // b's appends land between a's in the slab
    if (i === n / 2) await wb.flush(a); // later appends start a new extent
  }
  await wb.flush(a);
  await wb.flush(b);
  stopTimer(a);
  stopTimer(b);
  t.true(store.files.get(1)!.bytes.equals(Buffer.concat(Array.from({ length: n }, (_, i) => record(i)))));
  const bCount = Math.ceil(n / 3);
  t.true(store.files.get(2)!.bytes.equals(Buffer.concat(Array.from({ length: bCount }, (_, k) => record(~(3 * k))))));
});

test('close returns before the store write; the files closed together are stored in one concurrent batch; release waits for it', async (t) => {
  const store = new MemStore();
  const wb = newWriteBack(store);
  store.gate();
  const files = Array.from({ length: 50 }, (_, i) => new OpenFile(10 + i, 0));
  for (const f of files) {
    f.handles = 1;
    wb.write(f, 0, Buffer.from(`file ${f.ino}`), `file ${f.ino}`.length);
    await wb.close(f); // resolves with the store write still held by the gate
    f.handles = 0;
  }
  t.is(store.writes, 0, 'nothing was written before close returned');
  const settled = Promise.all(files.map((f) => wb.settle(f)));
  let done = false;
  void settled.then(() => {
    done = true;
  });
  while (store.inFlight < files.length) await new Promise((resolve) => setTimeout(resolve, 5));
  t.false(done, 'release waits until the batch is stored');
  t.is(store.maxInFlight, files.length, 'every closed file is in one batch of concurrent writes (one needle append)');
  store.release();
  await settled;
  for (const f of files) {
    t.is(store.files.get(f.ino)!.bytes.toString(), `file ${f.ino}`);
    stopTimer(f);
  }
});

test('a background flush that fails after close is reported by the next fsync of the file, once', async (t) => {
  const store = new MemStore();
  const wb = newWriteBack(store);
  store.failIno = 7;
  const f = new OpenFile(7, 0);
  f.handles = 1;
  wb.write(f, 0, Buffer.from('lost'), 4);
  await wb.close(f);
  f.handles = 0;
  await wb.settle(f); // release: no throw (the kernel drops release errors)
  stopTimer(f);
  const again = new OpenFile(7, 0); // the file state was forgotten; a new open of the inode
  again.handles = 1;
  await t.throwsAsync(wb.flush(again), { message: /injected/ }, 'the next fsync reports it');
  await t.notThrowsAsync(wb.flush(again), 'reported once');
});

test("what a transaction group's close could not keep is reported by the file's next close, once, not another's", async (t) => {
  // DESIGN §5: the store keeps the error by file; close(2) of that file takes it.
  const store = new MemStore();
  const wb = newWriteBack(store);
  const f = new OpenFile(7, 0);
  const other = new OpenFile(8, 0);
  store.groupErrors.set(7, new Error('EIO: only 1 of 2 required shards flushed'));
  await t.notThrowsAsync(wb.close(other), "another file's close does not report it");
  await t.throwsAsync(wb.close(f), { message: /required shards flushed/ }, 'its own close reports it');
  await t.notThrowsAsync(wb.close(f), 'reported once');
});

test("an mtime set while bytes are buffered is committed with them; a write after it commits its own time, never the flush's", async (t) => {
  const store = new MemStore();
  const wb = newWriteBack(store);
  const f = new OpenFile(3, 0);
  wb.write(f, 0, Buffer.from('abc'), 3);
  await wb.setMtime(f, 123_000_000_000n);
  await wb.flush(f);
  t.is(store.files.get(3)!.mtimeNs, 123_000_000_000n);
  wb.write(f, 3, Buffer.from('d'), 1);
  await wb.setMtime(f, 456n);
  wb.write(f, 4, Buffer.from('e'), 1);
  const shownNs = f.mtimeNs ?? undefined;
  t.not(shownNs, null);
  await new Promise((resolve) => setTimeout(resolve, 20)); // the flush comes later than the write
  await wb.flush(f);
  stopTimer(f);
  t.is(store.files.get(3)!.mtimeNs, shownNs, 'the write after utimens commits the time of that write (DESIGN §5)');
  t.is(store.files.get(3)!.ctimeNs, shownNs, 'ctime moved with that write, and not at the flush');
  t.is(store.files.get(3)!.bytes.toString(), 'abcde');
});

test('a closed file unlinked before its close batch, with no handle left, is never stored; one still open or still named is', async (t) => {
  const store = new MemStore();
  const wb = newWriteBack(store);
  const gone = new OpenFile(11, 0);
  const open = new OpenFile(12, 0);
  const named = new OpenFile(13, 0);
  for (const f of [gone, open, named]) {
    f.handles = 1;
    wb.write(f, 0, Buffer.from(`file ${f.ino}`), 7);
    await wb.close(f);
  }
  gone.handles = 0; // released, then its last name went (rm of a temporary file)
  gone.unlinked = true;
  open.unlinked = true; // unlinked while a descriptor is still open: its bytes can still be read
  named.handles = 0;
  await wb.settle(gone);
  await wb.settle(named);
  for (const f of [gone, open, named]) stopTimer(f);
  t.false(store.files.has(11), 'the unreachable file cost no store write');
  t.is(store.files.get(12)?.bytes.toString(), 'file 12');
  t.is(store.files.get(13)?.bytes.toString(), 'file 13');
  t.is(store.writes, 2);
  // The discarded bytes leave the buffer's count too: a count that only grew made every write past
  // the bound relieve pressure first, once enough temporary files had been discarded.
  t.is(wb.bufferedBytes, 0);
});
