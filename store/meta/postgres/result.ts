// A copy of one PostgreSQL result, readable after the connection has moved on (DESIGN §9).
import { PgResult } from './libpq';

/**
 * A statement's result as the server's text, copied out of the connection: kept (and patched) by
 * the row cache (row-cache.ts), and read later by a pipelined statement's caller (pipeline.ts).
 */
export class CachedResult implements PgResult {
  constructor(
    readonly names: string[],
    readonly types: number[],
    readonly values: Array<Array<string | null>>,
    private readonly tuples: string,
  ) {}
  /**
   * A copy of pq's result. like: an earlier copy of the same statement's result, whose column names
   * and types are taken (shared, never changed) instead of asked of libpq again, when the column
   * count and the last column's name agree (a row cache reads the same columns many times).
   */
  static of(pq: PgResult, like: CachedResult | null = null): CachedResult {
    const nf = pq.nfields();
    let names: string[];
    let types: number[];
    if (like !== null && like.names.length === nf && nf > 0 && like.names[nf - 1] === pq.fname(nf - 1)) {
      names = like.names;
      types = like.types;
    } else {
      names = new Array<string>(nf);
      types = new Array<number>(nf);
      for (let c = 0; c < nf; c++) {
        names[c] = pq.fname(c);
        types[c] = pq.ftype(c);
      }
    }
    const nt = pq.ntuples();
    const values = new Array<Array<string | null>>(nt);
    for (let r = 0; r < nt; r++) {
      const row = new Array<string | null>(nf);
      for (let c = 0; c < nf; c++) row[c] = pq.getisnull(r, c) ? null : pq.getvalue(r, c);
      values[r] = row;
    }
    return new CachedResult(names, types, values, pq.cmdTuples());
  }
  /** A copy whose rows may be patched apart from this one's. */
  copy(): CachedResult {
    return new CachedResult(
      this.names,
      this.types,
      this.values.map((row) => row.slice()),
      this.tuples,
    );
  }
  ntuples(): number {
    return this.values.length;
  }
  nfields(): number {
    return this.names.length;
  }
  fname(c: number): string {
    return this.names[c];
  }
  ftype(c: number): number {
    return this.types[c];
  }
  getvalue(r: number, c: number): string {
    return this.values[r][c] ?? '';
  }
  getisnull(r: number, c: number): boolean {
    return this.values[r][c] === null;
  }
  cmdTuples(): string {
    return this.tuples;
  }
}
