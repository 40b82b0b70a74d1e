// O_DIRECT reads of a file on a mount compared with a reference file, in a child process
// (test/helpers/direct-reads.py): the mismatches, [] when every read matched.
import * as path from 'node:path';
import { PYTHON, run } from './mount';
import { REPO_ROOT } from './root';

const DIRECT_READS_PY = path.join(REPO_ROOT, 'test', 'helpers', 'direct-reads.py');

/** Reads (offset, length), 4 KiB aligned, of file compared with ref; throws if the client itself fails. */
export async function directReadMismatches(
  file: string,
  ref: string,
  reads: Array<[number, number]>,
): Promise<unknown[]> {
  const r = await run(PYTHON, [DIRECT_READS_PY, file, ref, JSON.stringify(reads)], { timeoutMs: 120_000 });
  if (r.code !== 0) throw new Error(`direct reads failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as unknown[];
}
