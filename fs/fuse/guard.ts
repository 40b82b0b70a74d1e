// Every request answers exactly once, whatever its op does: the op's result, or for a throw or
// rejection its errno (EIO for anything untyped, logged in one line naming the op and its subject).
// A transport reply that throws while delivering a result (a conversion bug) answers EIO instead,
// so no request is ever left waiting. Failure lines are rate-limited per chunk (log-limiter.ts) and
// carry whole stacks only with -o debug.
import { constants } from 'node:os';
import { describeError, logKeyOf, toErrno } from '../errno';
import { LogLimiter } from '../log-limiter';
import { SlowRequests } from './slow-requests';

const EIO = -constants.errno.EIO;

export type Log = (message: string) => void;
/**
 * A mount's op log: the sink, its per-chunk rate limit, whether lines carry whole stacks, and the
 * requests still waiting for an answer (named once past SLOW_REQUEST_MS).
 */
export interface OpLog {
  line: Log;
  limiter: LogLimiter;
  debug: boolean;
  slow: SlowRequests;
}

/** What a log line names: a text, or a function making it only when a line is written. */
export type Subject = string | null | (() => string);

function textOf(subject: Subject): string {
  if (typeof subject === 'function') {
    try {
      return subject();
    } catch {
      return '?';
    }
  }
  return subject ?? '-';
}

export function opLog(line: Log, debug: boolean): OpLog {
  return { line, limiter: new LogLimiter(), debug, slow: new SlowRequests(line) };
}

export function isPromise<T>(r: T | Promise<T>): r is Promise<T> {
  return typeof (r as { then?: unknown } | null)?.then === 'function';
}

/** The (negative) reply errno for a failure, logged when untyped; never throws, whatever was thrown. */
export function errnoOf(log: OpLog, name: string, subject: Subject, err: unknown): number {
  try {
    const { errno, log: worth } = toErrno(err);
    if (worth) {
      const line = log.limiter.line(logKeyOf(err), `${name} ${textOf(subject)}: ${describeError(err, log.debug)}`);
      if (line !== null) log.line(line);
    }
    return errno;
  } catch {
    return EIO;
  }
}

/**
 * Calls the transport back with a result; if that throws, answers EIO instead. (The transports
 * convert the result before they answer, so a throw means nothing was answered yet.)
 */
function deliver(log: OpLog, name: string, subject: Subject, send: () => void, fail: (errno: number) => void): void {
  try {
    send();
  } catch (err) {
    try {
      log.line(`${name} ${textOf(subject)}: reply failed: ${describeError(err, log.debug)}`);
    } catch {
      /* answer regardless */
    }
    try {
      fail(EIO);
    } catch {
      /* the transport cannot answer at all; nothing is left to try */
    }
  }
}

/** Runs one op and answers exactly once: ok(its result), or fail(negative errno) for a throw or rejection. */
export function guard<T>(
  log: OpLog,
  name: string,
  subject: Subject,
  fn: () => T | Promise<T>,
  ok: (v: T) => void,
  fail: (errno: number) => void,
): void {
  const failed = (err: unknown): void => {
    try {
      fail(errnoOf(log, name, subject, err));
    } catch {
      /* as in deliver */
    }
  };
  let r: T | Promise<T>;
  try {
    r = fn();
  } catch (err) {
    failed(err);
    return;
  }
  if (!isPromise(r)) {
    deliver(log, name, subject, () => ok(r as T), fail);
    return;
  }
  const token = log.slow.start(name, () => textOf(subject));
  r.then(
    (v) => {
      log.slow.end(token);
      deliver(log, name, subject, () => ok(v), fail);
    },
    (err: unknown) => {
      log.slow.end(token);
      failed(err);
    },
  );
}
