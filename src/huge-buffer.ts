// Buffers in transparent huge pages (native/memory/huge_alloc.cc). On this kind of VM each first
// touch of a 4 KiB page costs ~15 us and a huge page ~0.4 us per 4 KiB, so the long-lived buffers
// that are filled page by page (the mount's write-back slabs, staging and chunk buffers) use them.
import { rsNative } from './rs-native';
import { assert } from './errors';

export const HUGE_PAGE_BYTES = 2 << 20;
/** The alignment O_DIRECT asks of buffers, lengths and offsets (spec §2 aligns every region to it). */
export const DIRECT_ALIGN_BYTES = 4096;

/** The memory allocHuge made: 2 MiB-aligned, so any view of it at a 4 KiB offset is page-aligned. */
const hugeMemory = new WeakSet<ArrayBufferLike>();

/**
 * Whether b may be handed to an O_DIRECT write as it is: inside memory allocHuge made, at a 4 KiB
 * offset, a whole number of 4 KiB. (Other memory's address is unknown from JavaScript.)
 */
export function directWritable(b: Uint8Array): boolean {
  return hugeMemory.has(b.buffer) && b.byteOffset % DIRECT_ALIGN_BYTES === 0 && b.length % DIRECT_ALIGN_BYTES === 0;
}

/** A Buffer of exactly lengthBytes, a multiple of 2 MiB, in huge-page-advised memory. */
export function allocHuge(lengthBytes: number): Buffer {
  assert(
    Number.isSafeInteger(lengthBytes) && lengthBytes > 0 && lengthBytes % HUGE_PAGE_BYTES === 0,
    `allocHuge: ${lengthBytes} is not a positive multiple of 2 MiB`,
  );
  const buf = rsNative().allocHuge(lengthBytes);
  assert(buf.length === lengthBytes, 'allocHuge: the addon returned the size asked for');
  assert(buf.byteOffset === 0, 'allocHuge: the Buffer starts at its memory');
  hugeMemory.add(buf.buffer);
  return buf;
}

/** allocHuge when the size allows it, else an ordinary unpooled buffer. */
export function allocLarge(lengthBytes: number): Buffer {
  return lengthBytes > 0 && lengthBytes % HUGE_PAGE_BYTES === 0
    ? allocHuge(lengthBytes)
    : Buffer.allocUnsafeSlow(lengthBytes);
}

/**
 * Gives the pages of buf (from allocHuge) back to the kernel; the Buffer stays usable, its bytes
 * read as zeros and the next touch faults them in again. False when buf is not whole huge pages.
 */
export function releaseHugePages(buf: Buffer): boolean {
  const native = rsNative();
  // An addon built before releasePages existed keeps the pages (a stale build/ must not crash a mount).
  return buf.length % HUGE_PAGE_BYTES === 0 && typeof native.releasePages === 'function' && native.releasePages(buf);
}
