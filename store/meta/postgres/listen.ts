// A read-only follower's ear on the writer (DESIGN §9): a connection of its own
// that LISTENs on the changes channel (change-notify.ts) and hands each batch of
// notifications to onChange, read asynchronously as the socket turns readable (libpq's reader), so
// the thread never waits for the writer. A lost connection (the server restarted, the network) is
// dialled again every RECONNECT_INTERVAL_MS; what was missed meanwhile is unknown, so the first
// batch after it is 'all'. Until then `connected` is false: the follower serves nothing it cannot
// check (store/follower.ts).
import type { LibpqConnection } from './libpq';
import { RECONNECT_INTERVAL_MS, finishLibpq } from './engine';
import { connectPg } from './connect';
import { CHANGES_CHANNEL, FOLLOWER_APP_NAME, parseChanged } from './change-notify';
import { redactedUrl } from './target';

/** Notifications taken from the socket per readable event (the rest wait for the next turn). */
const NOTIFIES_PER_TURN_MAX = 10_000;

export type Changed = number[] | 'all';

interface Notify {
  relname: string;
  extra: string;
}
type ListeningConnection = LibpqConnection & { notifies(): Notify | undefined };

export class PgListener {
  private pq: ListeningConnection | null = null;
  private retry: NodeJS.Timeout | null = null;
  private stopped = false;
  /** Said once per outage. */
  private toldLost = false;

  constructor(
    private readonly url: string,
    private readonly onChange: (changed: Changed) => void,
    private readonly log: (line: string) => void,
  ) {}

  /** Connected and listening: every commit of the writer from now on reaches onChange. */
  get connected(): boolean {
    return this.pq !== null;
  }

  /** Listen now; throws (a ConfigError naming the database) when it cannot, as an open does. */
  start(): void {
    this.pq = this.listen();
  }

  private listen(): ListeningConnection {
    const db = connectPg(this.url, true);
    try {
      // Named so the writer sees a follower and turns its change triggers on (announce.ts).
      db.exec(`SET application_name = '${FOLLOWER_APP_NAME}'; LISTEN ${CHANGES_CHANNEL}`);
    } catch (err) {
      db.close();
      throw err;
    }
    const pq = db.detach() as ListeningConnection;
    pq.on('readable', this.onReadable);
    pq.startReader();
    return pq;
  }

  private readonly onReadable = (): void => {
    const pq = this.pq;
    if (pq === null) return;
    if (!pq.consumeInput()) {
      this.lost(pq.errorMessage());
      return;
    }
    const inos = new Set<number>();
    let all = false;
    for (let n = 0; n < NOTIFIES_PER_TURN_MAX; n++) {
      const note = pq.notifies();
      if (note === undefined) break;
      if (note.relname !== CHANGES_CHANNEL) continue;
      const changed = parseChanged(note.extra);
      if (changed === 'all') all = true;
      else for (const ino of changed) inos.add(ino);
    }
    if (all) this.onChange('all');
    else if (inos.size > 0) this.onChange([...inos]);
  };

  private lost(why: string): void {
    this.hangUp();
    if (!this.toldLost)
      this.log(
        `lost the connection that follows the writer on ${redactedUrl(this.url)} (${why.trim() || 'closed'}); dialling again every ${RECONNECT_INTERVAL_MS} ms`,
      );
    this.toldLost = true;
    this.onChange('all');
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.stopped || this.retry !== null) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      if (this.stopped) return;
      try {
        this.pq = this.listen();
      } catch {
        this.scheduleRetry();
        return;
      }
      this.log(`following the writer on ${redactedUrl(this.url)} again`);
      this.toldLost = false;
      this.onChange('all'); // whatever committed while nobody listened
    }, RECONNECT_INTERVAL_MS);
    this.retry.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.retry !== null) clearTimeout(this.retry);
    this.retry = null;
    this.hangUp();
  }

  private hangUp(): void {
    const pq = this.pq;
    this.pq = null;
    if (pq === null) return;
    pq.removeListener('readable', this.onReadable);
    pq.stopReader();
    finishLibpq(pq);
  }
}
