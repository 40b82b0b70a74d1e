// Shared test helpers for store tests: temp stores, seeded random bytes. Every temp directory made here
// is removed when the test file ends, pass or fail (test.after.always; an 'exit' hook as a last resort).
import test from 'ava';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { prng } from '../../store/io/faulty-io';
import { Store, StoreCreateOptions } from '../../store/store';
import { copyStoreDir, routeNewStoresToTestEngine } from '../helpers/pg-meta';
import type { Db } from '../../store/meta/meta';
import { PgDb } from '../../store/meta/postgres/engine';

export const SMALL = { chunkSizeBytes: 256 * 1024, bitrotBlockBytes: 4096, ecBlockSizeBytes: 64 * 1024 };

const created = new Set<string>();

/** Remove every temp directory this test file made (idempotent; open stores are harmless on Linux). */
function removeCreated(): void {
  for (const dir of created) {
    fs.rmSync(dir, { recursive: true, force: true });
    created.delete(dir);
  }
}
test.after.always(removeCreated);
process.on('exit', removeCreated);

/**
 * A test's own write of a store's metadata behind its operations (damage, a row made by hand): on
 * PostgreSQL the rows the engine keeps are dropped after it, as no operation says what it wrote
 * (store/meta/postgres/row-cache.ts refuses such a write otherwise).
 */
export function writeBehind<T>(db: Db, fn: () => T): T {
  if (!(db instanceof PgDb)) return fn();
  const r = db.following(fn);
  db.rowCache.clear();
  return r;
}

/** Fresh temp directory, removed when this test file ends. */
export function tmpDir(prefix = 'chunkfs-store-', base = os.tmpdir()): string {
  const dir = fs.mkdtempSync(path.join(base, prefix));
  created.add(dir);
  return dir;
}

const MEMORY_FS = '/dev/shm';

/**
 * A temp directory in memory (tmpfs) when there is one: crash-model tests (store/io/faulty-io.ts model
 * durability themselves) sweep hundreds of crash points, and real device syncs would triple their time.
 */
export function memTmpDir(prefix = 'chunkfs-store-'): string {
  let base = os.tmpdir();
  try {
    fs.accessSync(MEMORY_FS, fs.constants.W_OK);
    base = MEMORY_FS;
  } catch {
    /* no tmpfs here: the ordinary temp directory */
  }
  return tmpDir(prefix, base);
}

/** A copy of a closed store in a fresh temp directory (with its own metadata database on PostgreSQL). */
export function copyStore(dir: string): string {
  const to = path.join(tmpDir('chunkfs-crash-'), 'store');
  copyStoreDir(dir, to);
  return to;
}

export async function smallStore(
  layout: string,
  disks = 6,
  extra: Partial<StoreCreateOptions> = {},
): Promise<{ store: Store; dir: string }> {
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

// CHUNKFS_TEST_META=postgres: the same tests on PostgreSQL metadata (test/helpers/pg-meta.ts).
routeNewStoresToTestEngine();
