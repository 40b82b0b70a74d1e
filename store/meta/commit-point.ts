// The engine's full commit (DESIGN §5 "What is durable when"), as store/meta/commit-log.ts uses it:
// a mark that changes with every commit, and the act that makes every commit so far durable.
// SQLite's: store/meta/sqlite/commit-point.ts; PostgreSQL's: store/meta/postgres/commit-point.ts.

export interface CommitPoint {
  /** Changes whenever a commit lands (compared with the mark at the last full commit). */
  mark(): bigint;
  /** Every commit made before the call is durable when this resolves. */
  makeDurable(): Promise<void>;
  /** Let go of what it holds (PostgreSQL: its connection); at store close. */
  close?(): void;
  /** A live mount's operations commit in groups of up to groupMs (SQLite: DESIGN §5 "Group commit"). */
  groupCommits?(groupMs: number): void;
}
