// Write-back pieces handed to the store as they lie (fs/write-buffer.ts, DESIGN §5 "Write-back
// pieces"): the store reads the slab memory while its write is in flight (an O_DIRECT writev of the
// slices), so no slab holding them may be emptied, reused or written over before the write settled.
import test from 'ava';
import { WriteBack } from '../../fs/write-buffer';
import { OpenFile } from '../../fs/handles';
import type { StorePort } from '../../fs/store-port';

const MIB = 1 << 20;
const CS = MIB;
const WRITE_BYTES = 128 << 10;

/** An in-memory store that keeps the parts it was given and reads them only when the test lets the write through. */
class LateReadStore {
  readonly files = new Map<number, Buffer>();
  private readonly held: Array<() => void> = [];
  holding = true;
  partWrites = 0;
  readonly ns = { getattr: (ino: number) => ({ ino, mtimeNs: 1_000n, ctimeNs: 2_000n }) };
  pathOf(): string | null {
    return null;
  }
  get pending(): number {
    return this.held.length;
  }
  open(): void {
    this.holding = false;
    while (this.held.length > 0) this.held.shift()!();
  }

  writeParts(ino: number, offsetBytes: number, parts: readonly Uint8Array[]): Promise<void> {
    this.partWrites++;
    return this.hold().then(() => this.put(ino, offsetBytes, Buffer.concat(parts))); // read late, as a device does
  }
  async write(ino: number, offsetBytes: number, data: Uint8Array): Promise<void> {
    await this.hold();
    this.put(ino, offsetBytes, data);
  }
  async readInto(): Promise<number> {
    return 0;
  }

  private async hold(): Promise<void> {
    if (this.holding) await new Promise<void>((resolve) => this.held.push(resolve));
  }
  private put(ino: number, offsetBytes: number, data: Uint8Array): void {
    const f = this.files.get(ino) ?? Buffer.alloc(0);
    const end = offsetBytes + data.length;
    const grown = f.length < end ? Buffer.concat([f, Buffer.alloc(end - f.length)]) : f;
    grown.set(data, offsetBytes);
    this.files.set(ino, grown);
  }
}

function pattern(seed: number, lengthBytes: number): Buffer {
  const b = Buffer.alloc(lengthBytes);
  for (let i = 0; i < lengthBytes; i += 4) b.writeUInt32LE((seed * 2654435761 + i) >>> 0, i);
  return b;
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((resolve) => setTimeout(resolve, 1));
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

test('slabs whose pieces a store write reads as they lie are not reused or written over until it settled', async (t) => {
  const store = new LateReadStore();
  const wb = new WriteBack(store as unknown as StorePort, {
    bufferBytesMax: 32 * MIB, // 2 MiB slabs
    flushDelayMs: 3_600_000,
    chunkSizeBytes: CS,
    log: () => undefined,
  });
  const a = new OpenFile(1, 0);
  const b = new OpenFile(2, 0);
  const expectA: Buffer[] = [];
  for (let off = 0; off < 8 * MIB; off += WRITE_BYTES) {
    const bytes = pattern(1 + off, WRITE_BYTES);
    expectA.push(bytes);
    t.is(wb.write(a, off, bytes, WRITE_BYTES), undefined);
  }
  const flushed = wb.flush(a);
  await until(() => store.pending === 1, 'the flush of a to reach the store');
  t.is(store.partWrites, 1, 'the batch went to the store as parts');
  // While a's write is in flight: the same range of a written again, and b filling fresh memory.
  // Had a's slabs been emptied, these bytes would land where a's write still reads.
  for (let off = 0; off < 8 * MIB; off += WRITE_BYTES) {
    t.is(wb.write(a, off, pattern(7 + off, WRITE_BYTES), WRITE_BYTES), undefined);
    t.is(wb.write(b, off, pattern(9 + off, WRITE_BYTES), WRITE_BYTES), undefined);
  }
  store.open();
  await flushed;
  t.true(store.files.get(1)!.equals(Buffer.concat(expectA)), 'the first flush stored exactly the bytes it took');
  t.is(wb.joinedBytes, 0, 'no batch was joined');
  await wb.flush(a);
  await wb.flush(b);
  for (let off = 0; off < 8 * MIB; off += WRITE_BYTES) {
    t.true(
      store.files
        .get(1)!
        .subarray(off, off + WRITE_BYTES)
        .equals(pattern(7 + off, WRITE_BYTES)),
    );
    t.true(
      store.files
        .get(2)!
        .subarray(off, off + WRITE_BYTES)
        .equals(pattern(9 + off, WRITE_BYTES)),
    );
  }
  for (const f of [a, b]) if (f.timer !== null) clearTimeout(f.timer);
});
