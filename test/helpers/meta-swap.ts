// Tests of a store opened on metadata that is not its own (DESIGN §4 "Identity"): point a closed store at
// empty metadata, another store's, or an older copy of its own, on the engine its config names (SQLite:
// meta.db files; PostgreSQL: the database in chunkfs.json), and list its shard files to show none went.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { testDatabase } from './pg-meta';

interface StoreConfigFile {
  storeUuid: string;
  meta?: { engine: string; url: string };
  defaults: Record<string, unknown>;
}

export function configOf(dir: string): StoreConfigFile {
  return JSON.parse(fs.readFileSync(path.join(dir, 'chunkfs.json'), 'utf8')) as StoreConfigFile;
}

export function writeConfig(dir: string, config: StoreConfigFile): void {
  fs.writeFileSync(path.join(dir, 'chunkfs.json'), JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
}

const META_FILES = ['meta.db', 'meta.db-wal', 'meta.db-shm'];

/**
 * The closed store in dir uses the metadata of the closed store `from` (its database, or a copy of its
 * meta.db), or empty metadata ('empty': a new database on this process's test cluster, an empty meta.db).
 */
export function useMetaOf(dir: string, from: string | 'empty'): void {
  const config = configOf(dir);
  if (config.meta !== undefined) {
    config.meta.url = from === 'empty' ? testDatabase() : configOf(from).meta!.url;
    writeConfig(dir, config);
    return;
  }
  for (const f of META_FILES) fs.rmSync(path.join(dir, f), { force: true });
  if (from === 'empty') fs.writeFileSync(path.join(dir, 'meta.db'), '', { mode: 0o600 });
  else
    for (const f of META_FILES)
      if (fs.existsSync(path.join(from, f))) fs.copyFileSync(path.join(from, f), path.join(dir, f));
}

/** Every file under the store's disks' .chunks trees (shards, temps), sorted. */
export function shardFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(path.join(d, e.name));
      else out.push(path.join(d, e.name));
    }
  };
  for (const disk of fs.readdirSync(path.join(dir, 'disks'))) {
    const chunks = path.join(dir, 'disks', disk, '.chunks');
    if (fs.existsSync(chunks)) walk(chunks);
  }
  return out.sort();
}
