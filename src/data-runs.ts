// Which bytes of a shard's payload a whole-shard write puts on the device (DESIGN §5 "Sparse shard
// writes"): runs of zero pages at least HOLE_BYTES_MIN long are left as holes of the shard file,
// which read back as zeros (their hashes are in the table like any block's, spec §4). The payload's
// last page is always written, so the file's length comes out as the spec lays it out (§2, §5).
import { assert } from './errors';
import { PAGE_BYTES } from './region';

/** The shortest run of zero pages left unwritten: shorter ones cost a system call more than their bytes. */
export const HOLE_BYTES_MIN = 64 * 1024;

/** Bytes [startBytes, endBytes) of one payload slice, to be written. */
export interface DataRun {
  slice: number;
  startBytes: number;
  endBytes: number;
}

/** Zero pages are compared this many at once (one memcmp, not a view per page). */
const ZERO_SPAN_PAGES = 64;
const ZEROS = new Uint8Array(ZERO_SPAN_PAGES * PAGE_BYTES);
const ZERO_PAGE = ZEROS.subarray(0, PAGE_BYTES);

function isZeroPage(b: Uint8Array, at: number): boolean {
  // A page of data is told by its first or last byte, with no view made (the common case: the scan
  // costs two reads per page); else memcmp against zeros.
  if (b[at] !== 0 || b[at + PAGE_BYTES - 1] !== 0) return false;
  return Buffer.compare(b.subarray(at, at + PAGE_BYTES), ZERO_PAGE) === 0;
}

/** The first page at or after page (a zero page) that is not zero, or endPage. */
function zeroPagesEnd(b: Uint8Array, page: number, endPage: number): number {
  let p = page;
  while (p < endPage) {
    const n = Math.min(ZERO_SPAN_PAGES, endPage - p);
    const span = b.subarray(p * PAGE_BYTES, (p + n) * PAGE_BYTES);
    if (Buffer.compare(span, ZEROS.subarray(0, n * PAGE_BYTES)) === 0) {
      p += n;
      continue;
    }
    while (p < endPage && isZeroPage(b, p * PAGE_BYTES)) p++;
    return p;
  }
  return p;
}

/**
 * The runs of each slice to write, in order. Slices are laid back to back; each hole is a whole
 * number of pages inside one slice, at a page offset of it, so a page-aligned slice yields
 * page-aligned runs (O_DIRECT writes them as they lie).
 */
export function dataRuns(slices: readonly Uint8Array[]): DataRun[] {
  const out: DataRun[] = [];
  let last = slices.length - 1;
  while (last > 0 && slices[last].length === 0) last--;
  slices.forEach((b, slice) => {
    const fullPages = Math.floor(b.length / PAGE_BYTES);
    // The last slice's last page (whole or short) is always written.
    const scanPages = slice === last ? Math.max(0, Math.ceil(b.length / PAGE_BYTES) - 1) : fullPages;
    let runStart = 0;
    let page = 0;
    while (page < scanPages) {
      if (!isZeroPage(b, page * PAGE_BYTES)) {
        page++;
        continue;
      }
      const end = zeroPagesEnd(b, page + 1, scanPages);
      if ((end - page) * PAGE_BYTES >= HOLE_BYTES_MIN) {
        if (page * PAGE_BYTES > runStart) out.push({ slice, startBytes: runStart, endBytes: page * PAGE_BYTES });
        runStart = end * PAGE_BYTES;
      }
      page = end;
    }
    if (b.length > runStart) out.push({ slice, startBytes: runStart, endBytes: b.length });
  });
  assert(
    out.every((r) => r.startBytes % PAGE_BYTES === 0 && r.endBytes > r.startBytes),
    'data runs start on pages',
  );
  return out;
}

/** Whether the runs are every byte of the slices (no hole: one write as before). */
export function coversAll(runs: readonly DataRun[], slices: readonly Uint8Array[]): boolean {
  return (
    runs.length === slices.filter((s) => s.length > 0).length &&
    runs.every((r) => r.startBytes === 0 && r.endBytes === slices[r.slice].length)
  );
}
