// Background work waits for the server's replies without holding the thread (DESIGN §9 "PostgreSQL
// round trips"): operations answered once sent leave replies unread, and a read waits for every one
// of them, blocking the only thread; when the server cannot run them yet (a lock another session
// holds, a slow server) every request would then wait too. A timer outside any request therefore
// reads the metadata only once nothing sent is unread.
import type { Db } from './sql-engine';

/** Resolves when no reply is pending; the caller reads at once (synchronously) after it. */
export async function repliesRead(db: Db): Promise<void> {
  while (db.repliesPending) await db.settle();
}
