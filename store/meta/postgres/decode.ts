// PostgreSQL values as the server prints them (text), decoded as the store's SQL engines give them
// (store/meta/sql-engine.ts): integers (int2/4/8, oid, and the numeric of sum()) as BigInt, as
// better-sqlite3's safe integers give them; bytea as Buffer; booleans as 1n/0n; NULL as null.
import { CachedResult } from './result';

/** PostgreSQL type OIDs decoded specially (pg_type.dat). */
const OID_BOOL = 16;
const OID_BYTEA = 17;
const OID_INT8 = 20;
const OID_INT2 = 21;
const OID_INT4 = 23;
const OID_OID = 26;
const OID_FLOAT4 = 700;
const OID_FLOAT8 = 701;
const OID_NUMERIC = 1700;

export type Decoder = (text: string) => unknown;

const asBigInt: Decoder = (s) => BigInt(s);
const asNumeric: Decoder = (s) => (/^-?[0-9]+$/.test(s) ? BigInt(s) : Number(s));
const asNumber: Decoder = (s) => Number(s);
const asBool: Decoder = (s) => (s === 't' ? 1n : 0n);
const asBytes: Decoder = (s) => Buffer.from(s.slice(2), 'hex'); // hex output format: \x0a0b...
const asText: Decoder = (s) => s;

export function decoderOf(oid: number): Decoder {
  switch (oid) {
    case OID_INT8:
    case OID_INT2:
    case OID_INT4:
    case OID_OID:
      return asBigInt;
    case OID_NUMERIC:
      return asNumeric;
    case OID_FLOAT4:
    case OID_FLOAT8:
      return asNumber;
    case OID_BOOL:
      return asBool;
    case OID_BYTEA:
      return asBytes;
    default:
      return asText;
  }
}

/** Where each of cols is in a result's columns, per column list (a row's names are one array per statement). */
const columnIndexes = new WeakMap<readonly string[], WeakMap<readonly string[], number[]>>();

function indexesOf(names: readonly string[], cols: readonly string[]): number[] {
  let byCols = columnIndexes.get(names);
  if (byCols === undefined) columnIndexes.set(names, (byCols = new WeakMap()));
  let at = byCols.get(cols);
  if (at === undefined) {
    at = cols.map((c) => names.indexOf(c));
    const missing = cols.find((_, i) => at![i] < 0);
    if (missing !== undefined) throw new Error(`metadata SQL: no column ${missing} in the row read`);
    byCols.set(cols, at);
  }
  return at;
}

/** cols of a one-row result, decoded, in the order asked (cols: a constant array of the caller's). */
export function rowValues(r: CachedResult, cols: readonly string[]): unknown[] {
  const at = indexesOf(r.names, cols);
  const row = r.values[0];
  return at.map((i) => (row[i] === null ? null : decoderOf(r.types[i])(row[i]!)));
}

/** cols of a one-row result, decoded, by name. */
export function rowObject(r: CachedResult, cols: readonly string[]): Record<string, unknown> {
  const v = rowValues(r, cols);
  const o: Record<string, unknown> = {};
  cols.forEach((c, i) => (o[c] = v[i]));
  return o;
}
