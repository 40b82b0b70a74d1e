// Shared test helpers for store tests: temp stores, seeded random bytes.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { prng } from '../../store/faulty-io';
import { Store, StoreCreateOptions } from '../../store/store';

export const SMALL = { chunkSizeBytes: 256 * 1024, bitrotBlockBytes: 4096, ecBlockSizeBytes: 64 * 1024 };

export function tmpDir(prefix = 'chunkfs-store-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export async function smallStore(layout: string, disks = 6, extra: Partial<StoreCreateOptions> = {}): Promise<{ store: Store; dir: string }> {
  const dir = path.join(tmpDir(), 'store');
  const store = await Store.create(dir, { disks, layout, ...SMALL, ...extra });
  return { store, dir };
}

export function randomBytes(random: () => number, length: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) out[i] = Math.floor(random() * 256);
  return out;
}

export { prng };
