// Space for buffered bytes (DESIGN §5; fs/space-ledger.ts, fs/write-buffer.ts): a write reserves
// the disk bytes it will take, from a sample of the disks' free space taken at most every
// SPACE_SAMPLE_MS or SPACE_SAMPLE_RESERVED_BYTES (exact counts with an injected clock); a write that
// does not fit fails with ENOSPC and buffers nothing; the reservation ends when the bytes are stored;
// bytes stored count as free only until a sample taken after them; a background flush's ENOSPC is
// reported by the file's next close.
import test from 'ava';
import { SPACE_SAMPLE_MS, SPACE_SAMPLE_RESERVED_BYTES, SpaceLedger } from '../../fs/space-ledger';
import { WriteBack } from '../../fs/write-buffer';
import { OpenFile } from '../../fs/handles';
import { posix } from '../../fs/errno';
import type { StorePort } from '../../fs/store-port';
import type { SpaceLayout } from '../../src/space-need';
import { parseLayout } from '../../src/layout';

const MIB = 1 << 20;
const CS = MIB;
/** Disk bytes of n logical bytes (page-aligned, in one chunk) under Disks' layout: 3 shards of an 8 KiB head and n. */
const need = (n: number): number => 3 * (8 * 1024 + n);

/** Disks of availBytes free raw space; every logical byte takes three (replica:3) plus one head. */
class Disks {
  availBytes: number;
  samples = 0;
  constructor(readonly totalBytes: number) {
    this.availBytes = totalBytes;
  }
  async rawStatfs(): Promise<{ totalBytes: number; freeBytes: number; availBytes: number }> {
    this.samples++;
    return { totalBytes: this.totalBytes, freeBytes: this.availBytes, availBytes: this.availBytes };
  }
  /** replica:3 with chunks and blocks so large that heads are a rounding error: 3 disk bytes per byte, plus heads. */
  spaceLayoutOf(): SpaceLayout {
    return { layout: parseLayout('replica:3'), chunkSizeBytes: 1 << 30, bitrotBlockBytes: 1 << 30 };
  }
}

/** Disks plus the part of a store the write-back uses; writes of failIno fail with ENOSPC. */
class MemStore extends Disks {
  readonly stored = new Map<number, Buffer>();
  failIno = -1;
  readonly ns = { getattr: (ino: number) => ({ ino, mtimeNs: 1_000n, ctimeNs: 2_000n }) };
  pathOf(): string | null {
    return null;
  }
  async write(ino: number, offsetBytes: number, data: Uint8Array): Promise<void> {
    if (ino === this.failIno) throw posix('ENOSPC', `inode ${ino}: no space left on the disks`);
    const old = this.stored.get(ino) ?? Buffer.alloc(0);
    const next = Buffer.alloc(Math.max(old.length, offsetBytes + data.length));
    old.copy(next);
    next.set(data, offsetBytes);
    this.stored.set(ino, next);
    this.availBytes -= 3 * data.length;
  }
  async readInto(): Promise<number> {
    return 0;
  }
}

function ledger(disks: Disks, clock: { ms: number }): SpaceLedger {
  return new SpaceLedger(disks as unknown as StorePort, () => clock.ms);
}

function newWriteBack(store: MemStore): WriteBack {
  return new WriteBack(store as unknown as StorePort, {
    bufferBytesMax: 64 * MIB,
    flushDelayMs: 3_600_000,
    chunkSizeBytes: CS,
    log: () => undefined,
  });
}

function stopTimer(file: OpenFile): void {
  if (file.timer !== null) clearTimeout(file.timer);
  file.timer = null;
}

test('the free space is sampled once per period or per 64 MiB reserved, not per write', async (t) => {
  const disks = new Disks(2 ** 40);
  const clock = { ms: 0 };
  const l = ledger(disks, clock);
  t.is(l.tryReserve(4096), null, 'no sample yet');
  await l.reserve(4096, () => 'first write');
  t.is(disks.samples, 1);
  for (let i = 0; i < 1000; i++) t.true(l.tryReserve(4096) === true);
  clock.ms += SPACE_SAMPLE_MS - 1;
  t.true(l.tryReserve(4096) === true, 'still fresh');
  t.is(disks.samples, 1, '1,002 writes of 4 KiB: one statfs sample');
  clock.ms += 1;
  t.is(l.tryReserve(4096), null, 'the period is over');
  await l.reserve(4096, () => 'write');
  t.is(disks.samples, 2);
  t.true(l.tryReserve(SPACE_SAMPLE_RESERVED_BYTES - 4096) === true);
  t.is(l.tryReserve(4096), null, 'SPACE_SAMPLE_RESERVED_BYTES reserved since the sample: a new one is due');
});

test('a reservation past the free space fails with ENOSPC; stored bytes count as free only until the next sample', async (t) => {
  const disks = new Disks(100 * MIB);
  const l = ledger(disks, { ms: 0 });
  await l.reserve(90 * MIB, () => 'big write');
  const err = await t.throwsAsync(l.reserve(20 * MIB, () => 'next write'));
  t.is((err as NodeJS.ErrnoException).code, 'ENOSPC');
  t.regex(err!.message, /^ENOSPC: next write: it needs 20971520 bytes on the disks, \d+ are free/);
  t.is(l.reserved, 90 * MIB, 'the refused reservation took nothing');
  // The 90 MiB are stored: the disks hold them, the reservation ends.
  disks.availBytes -= 90 * MIB;
  l.release(90 * MIB);
  t.is(l.reserved, 0);
  const again = await t.throwsAsync(l.reserve(20 * MIB, () => 'write after the store'));
  t.is((again as NodeJS.ErrnoException).code, 'ENOSPC', 'the new sample shows the stored bytes');
  disks.availBytes += 90 * MIB; // they were deleted
  await t.notThrowsAsync(l.reserve(20 * MIB, () => 'write after the delete'));
});

test('a write the disks cannot hold fails with ENOSPC and buffers nothing; storing ends the reservation', async (t) => {
  const store = new MemStore(10 * MIB); // 2% margin: 9.8 MiB of room
  const wb = newWriteBack(store);
  const f = new OpenFile(5, 0);
  f.handles = 1;
  await wb.write(f, 0, Buffer.alloc(MIB, 1), MIB);
  await wb.write(f, MIB, Buffer.alloc(2 * MIB, 2), 2 * MIB);
  t.is(wb.space.reserved, need(3 * MIB));
  const err = await t.throwsAsync(async () => wb.write(f, 3 * MIB, Buffer.alloc(MIB, 3), MIB));
  t.is((err as NodeJS.ErrnoException).code, 'ENOSPC');
  t.is(f.buffer.bytes, 3 * MIB, 'nothing of the refused write is buffered');
  t.is(f.sizeBytes, 3 * MIB, 'the size did not grow');
  t.is(wb.space.reserved, need(3 * MIB));
  await wb.write(f, 0, Buffer.alloc(MIB, 4), MIB); // an overwrite of buffered bytes needs no more
  t.is(wb.space.reserved, need(3 * MIB));
  await wb.flush(f);
  stopTimer(f);
  t.is(wb.space.reserved, 0, 'stored: the disks count them now');
  t.is(store.stored.get(5)?.length, 3 * MIB);
});

test("a background flush's ENOSPC after close is reported by the file's next close, once", async (t) => {
  const store = new MemStore(2 ** 40);
  const wb = newWriteBack(store);
  store.failIno = 7;
  const f = new OpenFile(7, 0);
  f.handles = 1;
  await wb.write(f, 0, Buffer.from('lost'), 4);
  await wb.close(f); // a small file: stored in the background, after close returned
  f.handles = 0;
  // The close batch's timer is unref'd (a mount's FUSE loop keeps the process alive): hold the
  // event loop open while the batch runs, or the test process may find nothing left to wait on.
  const alive = setInterval(() => undefined, 1_000);
  await wb.settle(f);
  clearInterval(alive);
  stopTimer(f);
  t.is(wb.space.reserved, 0, 'dropped: the reservation ended');
  const again = new OpenFile(7, 0);
  again.handles = 1;
  await wb.write(again, 0, Buffer.from('more'), 4);
  const err = await t.throwsAsync(wb.close(again));
  t.is((err as NodeJS.ErrnoException).code, 'ENOSPC', 'the next close reports it');
  stopTimer(again);
});
