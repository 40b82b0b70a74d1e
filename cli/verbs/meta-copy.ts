// `chunkfs meta copy <store> --to URI|sqlite` (DESIGN §9): the move itself is
// store/meta-move.ts; here, a mount of the store on this machine is refused first (a read-only one
// takes no store lock, yet would keep serving the old engine), then one line per step on stderr
// and the report on stdout. A SQLite store's intent log is folded into the shards first, by an
// open and close of the store, as a mount and unmount would (DESIGN §5: PostgreSQL keeps intents
// as rows, so records of the log file cannot move with the metadata).
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import type { MetaCommand } from '../meta-args';
import type { MetaMoveReport } from '../../store/meta-move';
import { chunkfsMounts } from '../mounts';
import { jsonText } from '../output';

function refuseMounted(storeDir: string): void {
  const mounts = chunkfsMounts().filter((m) => m.source === storeDir);
  if (mounts.length === 0) return;
  const where = mounts.map((m) => `${m.mountpoint}${m.options.includes('ro') ? ' (read-only)' : ''}`).join(', ');
  throw new Error(
    `store ${storeDir} is mounted on ${where}: meta copy works on a store nobody has open; ` +
      `unmount it first (chunkfs umount ${mounts[0].mountpoint}); nothing was changed`,
  );
}

function reportText(r: MetaMoveReport): string {
  const tables = r.tables.map((t) => `${t.name} ${t.rows}`).join(', ');
  return (
    `chunkfs meta copy: ${r.store}: metadata moved from ${r.from.engine} (${r.from.location}) to ${r.to.engine} (${r.to.location}): ` +
    `${r.rows} rows in ${r.tables.length} tables (${tables}), copied and verified row for row in ${r.seconds.toFixed(2)} s ` +
    `(${Math.round(r.rowsPerSecond)} rows/s); chunkfs.json names ${r.to.engine} now.\n` +
    `chunkfs meta copy: ${r.leftBehind}\n`
  );
}

/** Fold a SQLite store's intent log into its shards (a close applies what it can); PostgreSQL stores have none. */
async function foldIntentLog(
  storeDir: string,
  keyFile: string | undefined,
  log: (line: string) => void,
): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { openConfig } = require('../../store/config') as typeof import('../../store/config');
  if (openConfig(storeDir, undefined, keyFile).config.meta !== undefined) return;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Store } = require('../../store/store') as typeof import('../../store/store');
  log('folding the intent log into the shards first (an open and a close of the store, as a mount and unmount)');
  const store = await Store.open(storeDir, { keyFile, log });
  await store.close();
}

export async function metaCopyVerb(c: MetaCommand): Promise<number> {
  const storeDir = path.resolve(c.store);
  if (!existsSync(path.join(storeDir, 'chunkfs.json')))
    throw new Error(`${storeDir} is not a chunkfs store (no chunkfs.json there); name the store directory`);
  refuseMounted(storeDir);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { moveStoreMeta, planMetaMove } = require('../../store/meta-move') as typeof import('../../store/meta-move');
  const log = (line: string): void => {
    process.stderr.write(`chunkfs meta copy: ${line}\n`);
  };
  // As the other offline verbs: a key kept outside the store may come by environment.
  const keyFile = c.keyFile ?? process.env.CHUNKFS_KEYFILE;
  // A mistyped --to, a wrong key or a copy onto itself is refused before the fold opens the store read-write.
  planMetaMove(storeDir, c.to, { keyFile });
  await foldIntentLog(storeDir, keyFile, log);
  const r = moveStoreMeta(storeDir, c.to, { batchRows: c.batchRows, keyFile, log });
  process.stdout.write(c.json ? jsonText(r) : reportText(r));
  return 0;
}
