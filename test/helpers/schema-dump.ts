// A metadata database's schema as sorted lines of text, to compare two databases (DESIGN §9
// "Schema": a store made from schema.sql and one upgraded by the migrations end equal). SQLite:
// sqlite_master with its SQL text normalized (comments, quotes and spacing dropped: ALTER TABLE and
// RENAME rewrite the stored text), every table's columns, user_version. PostgreSQL: pg_catalog's
// columns, constraints, indexes, triggers, functions and sequences of the current schema, and
// chunkfs_schema. Both: the rows a schema makes (ino_high, the root directory, store_id's count).
import type { Db } from '../../store/meta/sql-engine';

type Row = Record<string, unknown>;

function lines(db: Db, sql: string, ...params: unknown[]): string[] {
  return (db.prepare(sql).all(...params) as Row[]).map((r) =>
    JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? `${v}` : v)),
  );
}

/** SQL text as SQLite stored it, without what does not change its meaning. */
export function normalizeSql(sql: string | null): string {
  return (sql ?? '')
    .replace(/--[^\n]*/g, '')
    .replace(/"/g, '')
    .replace(/\s+/g, ' ')
    .replace(/\s*([(),;])\s*/g, '$1')
    .trim();
}

const ROWS_SQL = [
  'SELECT k, ino FROM ino_high',
  'SELECT ino, type, mode, uid, gid, size, nlink, parent FROM inodes ORDER BY ino',
  'SELECT count(*) AS store_ids FROM store_id',
];

/** raw: SQL text (SQLite) and function bodies (PostgreSQL) as stored, word for word. */
function sqliteSchema(db: Db, raw: boolean): string[] {
  const objects = db
    .prepare(
      "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' " +
        'ORDER BY type, name',
    )
    .all() as Array<{ type: string; name: string; tbl_name: string; sql: string | null }>;
  const out = objects.map((o) => `${o.type} ${o.name} on ${o.tbl_name}: ${raw ? o.sql : normalizeSql(o.sql)}`);
  for (const o of objects.filter((x) => x.type === 'table')) {
    out.push(...lines(db, 'SELECT * FROM pragma_table_xinfo(?)', o.name).map((l) => `column ${o.name} ${l}`));
  }
  out.push(`version ${db.schemaVersion()}`);
  return out;
}

const PG_SQL = {
  relations: `SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() ORDER BY c.relname`,
  columns: `SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull,
      pg_get_expr(d.adbin, d.adrelid) AS dflt, co.collname, a.attidentity
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 100
    WHERE n.nspname = current_schema() AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
    ORDER BY c.relname, a.attnum`,
  constraints: `SELECT c.relname, k.conname, pg_get_constraintdef(k.oid) AS def FROM pg_constraint k
    JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() ORDER BY c.relname, k.conname`,
  indexes: 'SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname',
  triggers: `SELECT c.relname, g.tgname, pg_get_triggerdef(g.oid) AS def FROM pg_trigger g
    JOIN pg_class c ON c.oid = g.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND NOT g.tgisinternal ORDER BY c.relname, g.tgname`,
  functions: `SELECT p.proname, pg_get_function_result(p.oid) AS result, p.prosrc FROM pg_proc p
    JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema() ORDER BY p.proname`,
  sequences: `SELECT sequencename, data_type, start_value, increment_by FROM pg_sequences
    WHERE schemaname = current_schema() ORDER BY sequencename`,
  version: 'SELECT k, version FROM chunkfs_schema',
};

function pgSchema(db: Db, raw: boolean): string[] {
  const out: string[] = [];
  for (const [what, sql] of Object.entries(PG_SQL)) {
    const rows = db.prepare(sql).all() as Row[];
    for (const r of rows) {
      if (!raw && typeof r.prosrc === 'string') r.prosrc = r.prosrc.replace(/\s+/g, ' ').trim();
      out.push(`${what} ${JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? `${v}` : v))}`);
    }
  }
  return out;
}

/**
 * The schema of db as lines of text; rows: with the rows a new store's schema holds; raw: with the
 * stored text of SQLite's statements and PostgreSQL's function bodies as they are.
 */
export function schemaDump(db: Db, opts: { rows: boolean; raw?: boolean }): string[] {
  const raw = opts.raw ?? false;
  const schema = db.engine === 'postgres' ? pgSchema(db, raw) : sqliteSchema(db, raw);
  if (!opts.rows) return schema;
  return [...schema, ...ROWS_SQL.flatMap((sql) => lines(db, sql).map((l) => `row ${l}`))];
}
