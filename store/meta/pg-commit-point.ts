// PostgreSQL's full commit (DESIGN §5, §9; store/meta/commit-point.ts). Metadata transactions commit
// with synchronous_commit = off (store/meta/pg-open.ts): a commit is in the server's WAL when it
// returns, so it survives a kill of the mount at once, and the server flushes it within a fraction
// of a second. A full commit point (fsync, syncfs, unmount, the 5 s timer, before shards are touched
// under an intent) is one transaction with synchronous_commit = on that writes one row: PostgreSQL
// flushes its WAL up to that commit record before answering, and every earlier commit lies before
// it in the WAL. So an intent is durable before fsync returns, as on SQLite, with one WAL flush per
// group of fsyncs (commit-log.ts shares flushes between concurrent callers).
//
// Chosen over synchronous_commit = on for every transaction: that costs a WAL flush per metadata
// operation, which DESIGN §5 rules out (SQLite runs synchronous=NORMAL for the same reason).
// The call is synchronous (libpq, DESIGN §9): it holds the thread for the flush's round trip.
import type { CommitPoint } from './commit-point';
import type { PgDb } from './pg-engine';

/** The row a full commit writes (made by a read-write open, store/meta/pg-open.ts; no part of the shared schema). */
export const COMMIT_POINT_TABLE_SQL = 'CREATE TABLE IF NOT EXISTS chunkfs_commit_point(k INT PRIMARY KEY CHECK (k = 0), n BIGINT NOT NULL)';
const BUMP_SQL = 'INSERT INTO chunkfs_commit_point(k, n) VALUES (0, 1) ON CONFLICT (k) DO UPDATE SET n = chunkfs_commit_point.n + 1';

export class PgCommitPoint implements CommitPoint {
  constructor(private readonly db: PgDb) {}

  mark(): bigint {
    return this.db.commits;
  }

  async makeDurable(): Promise<void> {
    const before = this.db.commits;
    this.db.transaction(() => {
      this.db.exec('SET LOCAL synchronous_commit = on');
      this.db.prepare(BUMP_SQL).run(); // prepared once per connection (PgDb keeps texts)
    })();
    // The commit point's own commit needs no later flush: it is durable.
    if (this.db.commits === before + 1n) this.db.commits = before;
  }
}
