// Whole tables by name in the SQL both engines speak alike (DESIGN §9 "Moving between engines"):
// what `meta copy` counts, reads in key order, inserts and clears. Only the collation that orders
// text keys bytewise differs (SQLite BINARY, PostgreSQL "C"): each engine's schema.ts names it.
import { assert } from '../../../src/errors';
import type { Db, TableRow, WholeTables } from '../sql-engine';
import type { MetaTable } from '../meta-tables';

/** Placeholders in one INSERT (SQLite allows 32,766, PostgreSQL 65,535). */
const BIND_PARAMS_MAX = 16_000;

/** A key column as ORDER BY and row comparisons name it: text keys bytewise. */
function keyColumn(t: MetaTable, column: string, bytewiseCollation: string): string {
  return column === t.textKey ? `${column} COLLATE ${bytewiseCollation}` : column;
}

function count(db: Db, table: string): number {
  return Number((db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: bigint }).n);
}

function insert(db: Db, table: string, rows: readonly TableRow[]): void {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]);
  const perStatement = Math.max(1, Math.floor(BIND_PARAMS_MAX / columns.length));
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  for (let i = 0; i < rows.length; i += perStatement) {
    const part = rows.slice(i, i + perStatement);
    db.prepare(`INSERT INTO ${table}(${columns.join(', ')}) VALUES ${part.map(() => tuple).join(', ')}`).run(
      ...part.flatMap((r) => columns.map((c) => r[c])),
    );
  }
}

function clear(db: Db, table: string): void {
  db.prepare(`DELETE FROM ${table}`).run();
}

/** An SQL engine's whole tables, text keys ordered by bytewiseCollation (as COLLATE names it). */
export function sqlWholeTables(bytewiseCollation: string): WholeTables {
  return {
    count,
    batch(db: Db, t: MetaTable, after: readonly unknown[] | undefined, limit: number): TableRow[] {
      assert(Number.isSafeInteger(limit) && limit > 0, `${t.name}: a batch of ${limit} rows`);
      assert(after === undefined || after.length === t.key.length, `${t.name}: a key of ${t.key.length} columns`);
      const order = t.key.map((c) => keyColumn(t, c, bytewiseCollation)).join(', ');
      const where = after === undefined ? '' : `WHERE (${order}) > (${t.key.map(() => '?').join(', ')}) `;
      const rows = db
        .prepare(`SELECT * FROM ${t.name} ${where}ORDER BY ${order} LIMIT ${limit}`)
        .all(...(after ?? [])) as TableRow[];
      assert(rows.length <= limit, `${t.name}: ${rows.length} rows for a batch of ${limit}`);
      return rows;
    },
    insert,
    clear,
  };
}
