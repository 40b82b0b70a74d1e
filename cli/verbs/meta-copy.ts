// `chunkfs meta copy <store> --to URI|sqlite` (DESIGN §9): the move itself is
// store/meta-move.ts; here, a mount of the store on this machine is refused first (a read-only one
// takes no store lock, yet would keep serving the old engine), then one line per step on stderr
// and the report on stdout.
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

export function metaCopyVerb(c: MetaCommand): number {
  const storeDir = path.resolve(c.store);
  refuseMounted(storeDir);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { moveStoreMeta } = require('../../store/meta-move') as typeof import('../../store/meta-move');
  const log = (line: string): void => {
    process.stderr.write(`chunkfs meta copy: ${line}\n`);
  };
  const r = moveStoreMeta(storeDir, c.to, { batchRows: c.batchRows, keyFile: c.keyFile, log });
  process.stdout.write(c.json ? jsonText(r) : reportText(r));
  return 0;
}
