// Sizes on the command line: "4M", "16KiB", "4194304" (binary units).
import { UsageError } from './usage-error';

const SIZE_RE = /^([0-9]+)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib)?$/i;
const SIZE_UNIT: Record<string, number> = {
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1 << 20,
  mb: 1 << 20,
  mib: 1 << 20,
  g: 1 << 30,
  gb: 1 << 30,
  gib: 1 << 30,
};

/** "4M", "16KiB", "4194304" -> bytes (binary units). */
export function parseSize(verb: string, flag: string, text: string): number {
  const m = SIZE_RE.exec(text.trim());
  if (m === null) throw new UsageError(verb, `${flag}: '${text}' is not a size (e.g. 4M, 16K, 65536)`);
  const n = Number(m[1]) * SIZE_UNIT[(m[2] ?? 'b').toLowerCase()];
  if (!Number.isSafeInteger(n) || n <= 0) throw new UsageError(verb, `${flag}: '${text}' is out of range`);
  return n;
}
