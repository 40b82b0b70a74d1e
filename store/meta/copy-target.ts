// The target side of `chunkfs meta copy` (DESIGN §9; store/meta-move.ts runs the whole move): the
// copy's database gets this build's schema, every row and the row-for-row comparison in ONE
// transaction (store/meta/table-copy.ts), so that a kill or an error before its commit leaves it as
// it was: empty. Each engine's own: sqlite/copy-target.ts, postgres/copy-target.ts.
import { Db } from './sql-engine';
import { MetaCopyError, TableRows } from './table-copy';

export interface CopyResult {
  tables: TableRows[];
  rows: number;
}
/** Copy and verify into target (inside the transaction the engine's copy target opens). */
export type CopyStep = (target: Db) => CopyResult;

/** After the commit, seen again: the target's row counts are those copied. */
export function checkCounts(db: Db, tables: TableRows[]): void {
  for (const t of tables) {
    const n = db.schema.tables.count(db, t.name);
    if (n !== t.rows) throw new MetaCopyError(t.name, `${n} rows after the commit, ${t.rows} copied`);
  }
}
