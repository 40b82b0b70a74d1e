// Scrub's walk of the needles (spec §11.4): every small file's slice is read back
// through the needle read path (container range -> verified chunk read -> magic, file_id, cookie,
// data_crc32c). The chunk pass before it verified each container's shards block by block; this
// checks what those hashes cannot: that every slice names a needle of its own file that checks. A
// replica holding a bad needle is counted and queued for heal by the read itself
// (store/small/needle-io.ts); a needle no replica holds is reported here.
import { packedInodes } from '../meta/surveys';
import { Slice } from '../../src/slice';
import { ChunkEnv } from '../chunks/chunk-env';
import { ContainerHost, readNeedle } from '../small/needle-io';
import type { SliceRows } from '../meta/slice-rows';

/** Bad needles listed in a report (badCount is exact). */
export const BAD_NEEDLES_LISTED_MAX = 100;

export interface NeedleScrubReport {
  checked: number;
  badCount: number;
  bad: Array<{ ino: number; error: string }>;
}

export function emptyNeedleScrubReport(): NeedleScrubReport {
  return { checked: 0, badCount: 0, bad: [] };
}

function same(a: Slice | null, b: Slice): boolean {
  return a !== null && a.containerId === b.containerId && a.offsetBytes === b.offsetBytes && a.cookie === b.cookie;
}

/**
 * Read every slice's needle. Online, a file may be rewritten or compacted meanwhile: a failed read
 * whose slice changed since is not a finding (the new needle is checked by its own reads).
 */
export async function scrubNeedles(
  env: ChunkEnv,
  host: ContainerHost,
  slices: SliceRows,
  signal?: AbortSignal,
): Promise<NeedleScrubReport> {
  const report = emptyNeedleScrubReport();
  const inos = packedInodes(env.db);
  for (const ino of inos) {
    if (signal?.aborted === true) break;
    const slice = slices.get(ino);
    if (slice === null) continue; // rewritten into chunks or emptied since the list was taken
    try {
      await readNeedle(env, host, ino, slice);
      report.checked++;
    } catch (err) {
      if (!same(slices.get(ino), slice)) continue;
      report.checked++;
      report.badCount++;
      if (report.bad.length < BAD_NEEDLES_LISTED_MAX) report.bad.push({ ino, error: (err as Error).message });
    }
  }
  return report;
}
