// Dialling the metadata server again after the connection broke (DESIGN §9 "A broken connection"):
// on a timer, outside any request, so no request waits for a server that is down and none runs
// half on the old connection's view and half on the new one's. The first try goes at once (a
// terminated session, a restarted server: back within a second), the next ones after a delay that
// doubles up to RECONNECT_BACKOFF_MAX_MS, for as long as the store is open: a filesystem waits for
// its database as an NFS hard mount waits for its server (unmount always works). Each try is one
// libpq connect over the whole connection string, every host of it in turn (libpq's multi-host
// fail-over with target_session_attrs), bounded by its connect_timeout. While it is broken, every
// request that needs the server fails at once with EIO, naming the last try's failure.

/** Delay before the second try; each later one doubles it. */
export const RECONNECT_FIRST_DELAY_MS = 50;
/** The longest delay between two tries (the bound of the backoff). */
export const RECONNECT_BACKOFF_MAX_MS = 2000;

/** What the engine learns of a reconnection that worked (store/store.ts logs and counts it). */
export interface Reconnection {
  /** The connection string without a password. */
  target: string;
  /** Tries it took, the one that worked included. */
  tries: number;
  /** From the failure found to the new connection set up. */
  downMs: number;
  /** Why commits since the last fsync may be lost (the server restarted or failed over), else null. */
  mayHaveLost: string | null;
}

/** An outage under way, for `chunkfs status` (DESIGN §9 "A broken connection"). */
export interface Outage {
  /** When the connection was found broken (epoch ms). */
  sinceMs: number;
  /** Why: the last try's failure, else what broke it (one line). */
  reason: string;
  /** Tries made so far. */
  attempts: number;
  /** Dialled again on a timer; false: this connection is not (a tool's). */
  reconnecting: boolean;
}

export class ReconnectSchedule {
  private timer: NodeJS.Timeout | null = null;
  private tries = 0;
  private brokeAtMs = 0;
  private nextAtMs = 0;
  /** The last try's failure, for the errors of requests meanwhile. */
  lastFailure: string | null = null;
  private stopped = false;
  /** A try is running; brokeAgain: the connection it made broke before it ended (that try failed). */
  private running = false;
  private brokeAgain = false;

  /** attempt: one try; throws when it failed. */
  constructor(private readonly attempt: (tries: number, downMs: number) => void) {}

  /** The connection was found broken: tries start now, unless they run already. */
  broke(): void {
    if (this.stopped) return;
    if (this.running) {
      this.brokeAgain = true; // the try's own connection: it failed, the next one is scheduled
      return;
    }
    if (this.timer !== null) return;
    if (this.brokeAtMs === 0) {
      this.brokeAtMs = Date.now();
      this.tries = 0;
      this.lastFailure = null;
    }
    this.schedule(0);
  }

  /** A try worked (or the store closes): the outage is over. */
  private over(): void {
    this.brokeAtMs = 0;
    this.tries = 0;
  }

  /** The outage under way: since when and tries made; null when none (connected, or never dialled again). */
  outage(): { sinceMs: number; tries: number } | null {
    return this.brokeAtMs === 0 ? null : { sinceMs: this.brokeAtMs, tries: this.tries };
  }

  /** What a request meanwhile is told. */
  status(): string {
    const failed = this.lastFailure === null ? '' : `dialling again failed: ${this.lastFailure}; `;
    const inMs = Math.max(0, this.nextAtMs - Date.now());
    return `${failed}dialling again ${this.tries === 0 ? 'now' : `in ${inMs} ms (try ${this.tries + 1})`}`;
  }

  private schedule(delayMs: number): void {
    this.nextAtMs = Date.now() + delayMs;
    this.timer = setTimeout(() => this.run(), delayMs);
    this.timer.unref(); // a tool's process may end meanwhile
  }

  private run(): void {
    this.timer = null;
    if (this.stopped) return;
    this.tries++;
    this.running = true;
    this.brokeAgain = false;
    try {
      this.attempt(this.tries, Date.now() - this.brokeAtMs);
      if (!this.brokeAgain) return this.over();
      this.lastFailure = 'the new connection broke at once';
    } catch (err) {
      this.lastFailure = (err as Error).message;
    } finally {
      this.running = false;
    }
    this.schedule(Math.min(RECONNECT_FIRST_DELAY_MS * 2 ** (this.tries - 1), RECONNECT_BACKOFF_MAX_MS));
  }

  /** No more tries (the store closes). */
  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}
