// The durability model behind store/io/faulty-io.ts: per tracked file, the bytes the
// process sees (current) and the bytes a power loss would leave (durable).
import { mulberry32Float } from '../../src/prng';
const PAGE_BYTES = 4096;

export interface Tracked {
  current: Buffer;
  durable: Buffer;
}

/** Small deterministic PRNG (mulberry32) so torn crashes are reproducible. */
export const prng = mulberry32Float;

export function writeInto(target: Buffer, data: Uint8Array, position: number): Buffer {
  const end = position + data.length;
  let out = target;
  if (end > target.length) {
    out = Buffer.alloc(end);
    target.copy(out);
  }
  out.set(data, position);
  return out;
}

export function resize(buf: Buffer, length: number): Buffer {
  if (length <= buf.length) return Buffer.from(buf.subarray(0, length));
  const out = Buffer.alloc(length);
  buf.copy(out);
  return out;
}

/** Each 4 KiB page of the file: the durable or the current bytes, at random. */
export function tear(t: Tracked, random: () => number): Buffer {
  if (t.current.equals(t.durable)) return t.durable;
  const length = random() < 0.5 ? t.durable.length : t.current.length;
  const out = Buffer.alloc(length);
  for (let page = 0; page * PAGE_BYTES < length; page++) {
    const src = random() < 0.5 ? t.durable : t.current;
    const start = page * PAGE_BYTES;
    const end = Math.min(start + PAGE_BYTES, length, src.length);
    if (end > start) src.copy(out, start, start, end);
  }
  return out;
}
