// Copying a store's metadata tables from one engine to another, and verifying the copy row for row
// (DESIGN §9, `chunkfs meta copy`): every table of META_TABLES, in primary-key order, in batches of
// at most batchRows rows, so memory stays bounded whatever the store's size. The caller runs both
// inside one transaction on the target: a failure or a difference leaves the target as it was.
import { ChunkfsError } from '../../src/errors';
import { Db, TableRow } from './sql-engine';
import { META_TABLES, MetaTable } from './meta-tables';

/** Rows read, written and compared per batch, by default (`meta copy --batch-rows`). */
export const COPY_BATCH_ROWS = 1000;
export const COPY_BATCH_ROWS_MAX = 100_000;

/** A copy that differs from its source, or a source that changed under the copy: names the table and row. */
export class MetaCopyError extends ChunkfsError {
  constructor(
    readonly table: string,
    problem: string,
  ) {
    super(`metadata copy, table ${table}: ${problem}`);
  }
}

export interface TableRows {
  name: string;
  rows: number;
}

function countRows(db: Db, table: string): number {
  return db.schema.tables.count(db, table);
}

/** Batches a table of `rows` rows takes, plus one (the empty read that ends it): the loops' bound. */
function batchesFor(rows: number, batchRows: number): number {
  return Math.ceil(rows / batchRows) + 1;
}

/** The rows of t in key order, batch by batch (keyset: each batch starts after the last key read). */
function* rowBatches(db: Db, t: MetaTable, batchRows: number, batchesMax: number): Generator<TableRow[]> {
  let rows = db.schema.tables.batch(db, t, undefined, batchRows);
  for (let n = 0; rows.length > 0; n++) {
    if (n >= batchesMax)
      throw new MetaCopyError(
        t.name,
        `more rows than the ${(batchesMax - 1) * batchRows} counted (did the store change during the copy?)`,
      );
    yield rows;
    if (rows.length < batchRows) return;
    const last = rows[rows.length - 1];
    rows = db.schema.tables.batch(
      db,
      t,
      t.key.map((c) => last[c]),
      batchRows,
    );
  }
}

/**
 * Empty every store table of target (its migration made a root inode and counters), then copy
 * every row of source; onTable is told each table and its row count before its rows go.
 */
export function copyTables(
  source: Db,
  target: Db,
  batchRows: number,
  onTable: (name: string, rows: number) => void,
): TableRows[] {
  for (const t of META_TABLES) target.schema.tables.clear(target, t.name);
  const out: TableRows[] = [];
  for (const t of META_TABLES) {
    const rows = countRows(source, t.name);
    onTable(t.name, rows);
    let copied = 0;
    for (const batch of rowBatches(source, t, batchRows, batchesFor(rows, batchRows))) {
      target.schema.tables.insert(target, t.name, batch);
      copied += batch.length;
    }
    if (copied !== rows)
      throw new MetaCopyError(t.name, `counted ${rows} rows, copied ${copied} (did the store change during the copy?)`);
    target.schema.afterCopy(target, t.name);
    out.push({ name: t.name, rows });
  }
  return out;
}

/** A value as both engines' rows are compared: type and content (integers are BigInt on both). */
function canonical(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'bigint') return `integer ${v}`;
  if (typeof v === 'number') return Number.isInteger(v) ? `integer ${v}` : `real ${v}`;
  if (typeof v === 'string') return `text ${JSON.stringify(v)}`;
  if (v instanceof Uint8Array) return `blob x'${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')}'`;
  return `${typeof v} ${String(v)}`;
}

function keyText(t: MetaTable, row: TableRow): string {
  return t.key.map((c) => `${c}=${canonical(row[c]).replace(/^\w+ /, '')}`).join(', ');
}

function compareRows(t: MetaTable, a: TableRow, b: TableRow): void {
  const ca = Object.keys(a).sort();
  const cb = Object.keys(b).sort();
  if (ca.join(',') !== cb.join(','))
    throw new MetaCopyError(t.name, `columns differ: source (${ca.join(', ')}), copy (${cb.join(', ')})`);
  for (const c of ca) {
    const x = canonical(a[c]);
    const y = canonical(b[c]);
    if (x !== y)
      throw new MetaCopyError(
        t.name,
        `row ${keyText(t, a)}${keyText(t, a) === keyText(t, b) ? '' : ` (copy: ${keyText(t, b)})`}: column ${c} is ${x.slice(0, 200)} in the source, ${y.slice(0, 200)} in the copy`,
      );
  }
}

/**
 * Every table of target holds what source holds: the same row count, and row for row the same
 * columns and values, compared in key order batch by batch. Throws MetaCopyError at the first
 * difference; returns the rows compared.
 */
export function verifyTables(source: Db, target: Db, batchRows: number): number {
  let compared = 0;
  for (const t of META_TABLES) {
    const n = countRows(source, t.name);
    const m = countRows(target, t.name);
    if (n !== m) throw new MetaCopyError(t.name, `${n} rows in the source, ${m} in the copy`);
    const batchesMax = batchesFor(n, batchRows);
    const a = rowBatches(source, t, batchRows, batchesMax);
    const b = rowBatches(target, t, batchRows, batchesMax);
    for (let i = 0; i < batchesMax; i++) {
      const x = a.next();
      const y = b.next();
      if (x.done === true || y.done === true) {
        if (x.done !== y.done)
          throw new MetaCopyError(
            t.name,
            `the ${x.done === true ? 'source' : 'copy'} ends first, after ${compared} rows`,
          );
        break;
      }
      if (x.value.length !== y.value.length)
        throw new MetaCopyError(
          t.name,
          `a batch of ${x.value.length} rows in the source, ${y.value.length} in the copy`,
        );
      for (let r = 0; r < x.value.length; r++) compareRows(t, x.value[r], y.value[r]);
      compared += x.value.length;
    }
  }
  return compared;
}
