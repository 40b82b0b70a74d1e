// Which statements the row cache (store/meta/postgres/row-cache.ts) can follow, read from their
// text (DESIGN §9): keyed reads of one table by equalities, and writes whose rows it can tell
// (UPDATE/DELETE by equalities, INSERT by table). Names and the inherited layout are not read here:
// the namespace's operations keep them (namespace-ops.ts). The texts are the code's own.

/** A SET item the cache can follow: `col = $n`, `col = col + $n` (add), or `col = GREATEST(col, $n)` (max). */
export interface PlainSet {
  col: string;
  param: number;
  add: boolean;
  max?: boolean;
}

export type Plan =
  /** columns: the select list when plainColumns ('*' for all). */
  | { kind: 'read'; table: string; keys: string[]; params: number[]; plainColumns: boolean; columns: string[] | '*' }
  /** A read of one table's rows of one inode (`WHERE ino = $n AND ...`, other conditions too): none while the inode is new. */
  | { kind: 'ofInode'; table: string; param: number }
  /** inoParam: a write whose rows are all of one inode (`WHERE ino = $n AND ...`), when where cannot say it. */
  | {
      kind: 'write';
      table: string;
      where: string[] | null;
      params: number[];
      set: PlainSet[] | null;
      setCols: string[] | null;
      insert: boolean;
      upsert: boolean;
      inoParam?: number;
    }
  /** Not a keyed read or a write it can follow: writes says whether it may change rows. */
  | { kind: 'other'; writes: boolean };

const IDENT = '[a-z_][a-z0-9_]*';
const EQ = `(${IDENT})\\s*=\\s*\\$(\\d+)`;
const READ_RE = new RegExp(
  `^\\s*SELECT\\s+([^$;]+?)\\s+FROM\\s+(${IDENT})\\s+WHERE\\s+(${EQ}(?:\\s+AND\\s+${EQ})*)\\s*(?:ORDER\\s+BY\\s+[a-z0-9_,\\s]+)?(?:LIMIT\\s+\\d+)?\\s*$`,
  'is',
);
const UPDATE_RE = new RegExp(
  `^\\s*UPDATE\\s+(${IDENT})\\s+SET\\s+(.+?)\\s+WHERE\\s+(${EQ}(?:\\s+AND\\s+${EQ})*)\\s*(?:RETURNING\\s+[a-z0-9_,\\s]+)?$`,
  'is',
);
const DELETE_RE = new RegExp(
  `^\\s*DELETE\\s+FROM\\s+(${IDENT})\\s+WHERE\\s+(${EQ}(?:\\s+AND\\s+${EQ})*)\\s*(?:RETURNING\\s+[a-z0-9_,\\s]+)?$`,
  'is',
);
/**
 * Rows of one table (plain columns: no aggregate, whose one row would be there anyway), `WHERE ino = $n`
 * first, then more conditions joined by AND (planOf refuses OR, joins and subqueries).
 */
const OF_INODE_RE = new RegExp(
  `^\\s*SELECT\\s+(?:\\*|${IDENT}(?:\\s*,\\s*${IDENT})*)\\s+FROM\\s+(${IDENT})\\s+WHERE\\s+ino\\s*=\\s*\\$(\\d+)(?:\\s+AND\\s+[^;]*)?$`,
  'is',
);
/** An UPDATE or DELETE's WHERE that keeps to one inode: `ino = $n` first, more conditions by AND (planOf refuses OR). */
const ONE_INODE_WHERE_RE = /\bWHERE\s+ino\s*=\s*\$(\d+)(?:\s+AND\s+[^;]*)?$/is;
const INSERT_RE = new RegExp(`^\\s*INSERT\\s+INTO\\s+(${IDENT})\\b`, 'is');
const TABLE_WRITE_RE = new RegExp(`^\\s*(?:UPDATE|DELETE\\s+FROM)\\s+(${IDENT})\\b`, 'is');
/** An INSERT's column list and VALUES list (which parameter goes to which column). */
export const INSERT_COLUMNS_RE = new RegExp(
  `^\\s*INSERT\\s+INTO\\s+${IDENT}\\s*\\(([^)]*)\\)\\s*VALUES\\s*\\(([^)]*)\\)`,
  'is',
);
/** A select list that may not be cached: calls whose value changes by themselves, subqueries. */
const VOLATILE_RE =
  /\b(now|nextval|currval|random|clock_timestamp|statement_timestamp|txid_current|pg_\w+|select)\b|\(\s*\)/i;

function equalities(where: string): { cols: string[]; params: number[] } {
  const cols: string[] = [];
  const params: number[] = [];
  for (const m of where.matchAll(new RegExp(EQ, 'gi'))) {
    cols.push(m[1].toLowerCase());
    params.push(Number(m[2]) - 1);
  }
  return { cols, params };
}

/** SET list items when each is `col = $n`, `col = col + $n` or `col = GREATEST(col, $n)`; null when any is another expression. */
function plainSets(set: string): PlainSet[] | null {
  const out: PlainSet[] = [];
  for (const part of setItems(set)) {
    const m = new RegExp(`^\\s*${EQ}\\s*$`, 'i').exec(part);
    if (m !== null) {
      out.push({ col: m[1].toLowerCase(), param: Number(m[2]) - 1, add: false });
      continue;
    }
    const g = new RegExp(
      `^\\s*(${IDENT})\\s*=\\s*GREATEST\\s*\\(\\s*(${IDENT})\\s*,\\s*\\$(\\d+)\\s*\\)\\s*$`,
      'i',
    ).exec(part);
    if (g !== null) {
      if (g[1].toLowerCase() !== g[2].toLowerCase()) return null;
      out.push({ col: g[1].toLowerCase(), param: Number(g[3]) - 1, add: false, max: true });
      continue;
    }
    const a = new RegExp(`^\\s*(${IDENT})\\s*=\\s*(${IDENT})\\s*\\+\\s*\\$(\\d+)\\s*$`, 'i').exec(part);
    if (a === null || a[1].toLowerCase() !== a[2].toLowerCase()) return null;
    out.push({ col: a[1].toLowerCase(), param: Number(a[3]) - 1, add: true });
  }
  return out;
}

/** The columns of a plain select list, '*' for all. */
function columnsOf(list: string): string[] | '*' {
  const t = list.trim();
  if (t === '*') return '*';
  return t.split(',').map((c) => c.trim().toLowerCase());
}

/** A SET list's items: split at commas outside parentheses. */
function setItems(set: string): string[] {
  let depth = 0;
  let start = 0;
  const parts: string[] = [];
  for (let i = 0; i < set.length; i++) {
    if (set[i] === '(') depth++;
    else if (set[i] === ')') depth--;
    else if (set[i] === ',' && depth === 0) {
      parts.push(set.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(set.slice(start));
  return parts;
}

/** Columns a SET list assigns (expressions included); null when it cannot tell. */
function setColumns(set: string): string[] | null {
  const cols: string[] = [];
  for (const p of setItems(set)) {
    const m = new RegExp(`^\\s*(${IDENT})\\s*=`, 'i').exec(p);
    if (m === null) return null;
    cols.push(m[1].toLowerCase());
  }
  return cols;
}

export function planOf(text: string): Plan {
  let m = READ_RE.exec(text);
  if (m !== null && !VOLATILE_RE.test(m[1])) {
    const eq = equalities(m[3]);
    // Plain columns (`*` or names, no AS, no expressions): a result column is the table's column, which a patch may write.
    const plainColumns =
      new RegExp(`^\\s*(\\*|${IDENT}(\\s*,\\s*${IDENT})*)\\s*$`, 'i').test(m[1]) && !/\bAS\b/i.test(m[1]);
    if (new Set(eq.cols).size === eq.cols.length) {
      return {
        kind: 'read',
        table: m[2].toLowerCase(),
        keys: eq.cols,
        params: eq.params,
        plainColumns,
        columns: plainColumns ? columnsOf(m[1]) : [],
      };
    }
  }
  m = OF_INODE_RE.exec(text);
  if (
    m !== null &&
    !/\b(OR|JOIN|UNION|INSERT|UPDATE|DELETE|GROUP|HAVING)\b/i.test(text) &&
    (text.match(/\bSELECT\b/gi) ?? []).length === 1
  ) {
    return { kind: 'ofInode', table: m[1].toLowerCase(), param: Number(m[2]) - 1 };
  }
  // Reads, and transaction control (a rollback clears the cache itself), change no row.
  if (/^\s*(SELECT|WITH)\b/i.test(text) && !/\b(INSERT|UPDATE|DELETE|TRUNCATE|MERGE)\b/i.test(text))
    return { kind: 'other', writes: false };
  if (/^\s*(BEGIN|COMMIT|SAVEPOINT|RELEASE)\b/i.test(text)) return { kind: 'other', writes: false };
  m = UPDATE_RE.exec(text);
  if (m !== null) {
    const eq = equalities(m[3]);
    return {
      kind: 'write',
      table: m[1].toLowerCase(),
      where: eq.cols,
      params: eq.params,
      set: plainSets(m[2]),
      setCols: setColumns(m[2]),
      insert: false,
      upsert: false,
    };
  }
  m = DELETE_RE.exec(text);
  if (m !== null) {
    const eq = equalities(m[2]);
    return {
      kind: 'write',
      table: m[1].toLowerCase(),
      where: eq.cols,
      params: eq.params,
      set: null,
      setCols: [],
      insert: false,
      upsert: false,
    };
  }
  m = INSERT_RE.exec(text);
  if (m !== null) {
    const upsert = /\bON\s+CONFLICT\b[\s\S]*\bDO\s+UPDATE\b/i.test(text);
    return {
      kind: 'write',
      table: m[1].toLowerCase(),
      where: null,
      params: [],
      set: null,
      setCols: null,
      insert: true,
      upsert,
    };
  }
  m = TABLE_WRITE_RE.exec(text);
  if (m !== null) {
    const one = ONE_INODE_WHERE_RE.exec(text);
    const inoParam =
      one !== null && !/\b(OR|FROM\s+\w+\s*,|USING|SELECT)\b/i.test(text.slice(one.index))
        ? Number(one[1]) - 1
        : undefined;
    return {
      kind: 'write',
      table: m[1].toLowerCase(),
      where: null,
      params: [],
      set: null,
      setCols: null,
      insert: false,
      upsert: false,
      inoParam,
    };
  }
  return { kind: 'other', writes: true };
}
