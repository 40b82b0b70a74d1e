// Placeholders of the metadata interface (store/meta/sql-engine.ts: `?` positional, `@name` named)
// as PostgreSQL's `$n`. Exact, not a guess: a small lexer that skips string literals, quoted
// identifiers, comments and dollar-quoted bodies (plpgsql in migrations), so only real
// placeholders change. Everything else that differs between the engines is written out by each
// engine's folder (its dialect.ts and own statements, DESIGN §9 "Operations"), never rewritten here.

export interface PgText {
  text: string;
  /** Positional statements: how many `?`. */
  positional: number;
  /** Named statements: the name of each $n, in order ($1 first). */
  names: string[];
}

/** Statements one text may hold placeholders for: PostgreSQL's own bound. */
const PARAMS_MAX = 65535;

export class PlaceholderError extends Error {
  constructor(
    readonly sql: string,
    what: string,
  ) {
    super(`metadata SQL: ${what} in: ${sql.slice(0, 200)}`);
    this.name = 'PlaceholderError';
  }
}

function isNameChar(c: string): boolean {
  return /[A-Za-z0-9_]/.test(c);
}

/** The end (exclusive) of a quoted run starting at i with quote q ('' or "" escape themselves). */
function quotedEnd(sql: string, i: number, q: string): number {
  for (let j = i + 1; j < sql.length; j++) {
    if (sql[j] !== q) continue;
    if (sql[j + 1] === q) {
      j++;
      continue;
    }
    return j + 1;
  }
  throw new PlaceholderError(sql, `unterminated ${q} quote`);
}

/** The end of a $tag$...$tag$ body starting at i, or -1 when $ here is not a dollar quote. */
function dollarEnd(sql: string, i: number): number {
  const m = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
  if (m === null) return -1;
  const close = sql.indexOf(m[0], i + m[0].length);
  if (close < 0) throw new PlaceholderError(sql, `unterminated ${m[0]} body`);
  return close + m[0].length;
}

export function toPgPlaceholders(sql: string): PgText {
  let out = '';
  let positional = 0;
  const names: string[] = [];
  for (let i = 0; i < sql.length; ) {
    const c = sql[i];
    let end = i + 1;
    if (c === "'" || c === '"') end = quotedEnd(sql, i, c);
    else if (c === '-' && sql[i + 1] === '-') end = sql.indexOf('\n', i) < 0 ? sql.length : sql.indexOf('\n', i);
    else if (c === '$' && dollarEnd(sql, i) > 0) end = dollarEnd(sql, i);
    else if (c === '?') {
      out += `$${++positional}`;
      i = end;
      continue;
    } else if (c === '@' && isNameChar(sql[i + 1] ?? '')) {
      while (end < sql.length && isNameChar(sql[end])) end++;
      const name = sql.slice(i + 1, end);
      let n = names.indexOf(name);
      if (n < 0) n = names.push(name) - 1;
      out += `$${n + 1}`;
      i = end;
      continue;
    }
    out += sql.slice(i, end);
    i = end;
  }
  if (positional > 0 && names.length > 0) throw new PlaceholderError(sql, 'both ? and @name placeholders');
  if (positional > PARAMS_MAX || names.length > PARAMS_MAX)
    throw new PlaceholderError(sql, `more than ${PARAMS_MAX} placeholders`);
  return { text: out, positional, names };
}
