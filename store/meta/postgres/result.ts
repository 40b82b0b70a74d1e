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
  static of(pq: PgResult): CachedResult {
    const nf = pq.nfields();
    return new CachedResult(
      Array.from({ length: nf }, (_, c) => pq.fname(c)),
      Array.from({ length: nf }, (_, c) => pq.ftype(c)),
      Array.from({ length: pq.ntuples() }, (_, r) =>
        Array.from({ length: nf }, (_, c) => (pq.getisnull(r, c) ? null : pq.getvalue(r, c))),
      ),
      pq.cmdTuples(),
    );
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
