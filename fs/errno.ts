// Error -> FUSE reply. Typed store errors carry their POSIX code; anything else is a bug or an
// unrecoverable read and answers EIO, logged with its site so it can be traced (DESIGN §6).
import { constants } from 'node:os';
import { FsError, FsErrorCode } from '../store/fs-error';
import { ChunkfsError, UnrecoverableError } from '../src/errors';

const ERRNO = constants.errno as Record<string, number>;

/** A POSIX failure raised inside fs/ itself (bad flags, bad handle, permission): the store's one POSIX error type. */
export function posix(code: FsErrorCode, message: string): FsError {
  return new FsError(code, message);
}

/**
 * One log line for an error (no stack traces unless -o debug): its name and message; a
 * store error names its own site (file, chunk, shard), anything else (a bug) adds the frame that
 * threw. debug: the whole stack, on the lines after.
 */
export function describeError(err: unknown, debug = false): string {
  if (!(err instanceof Error)) return String(err).replace(/\s+/g, ' ');
  const text = `${err.name}: ${err.message}`.replace(/\s+/g, ' ');
  if (debug && err.stack !== undefined) return `${text}\n${err.stack.split('\n').slice(1).join('\n')}`;
  if (err instanceof ChunkfsError) return text;
  const site = err.stack
    ?.split('\n')
    .find((l) => l.trimStart().startsWith('at '))
    ?.trim();
  return site === undefined ? text : `${text} (${site})`;
}

/** What a log line is about, for rate limiting (fs/log-limiter.ts): the chunk, else the error itself. */
export function logKeyOf(err: unknown): string {
  if (err instanceof ChunkfsError && err.site.fileId !== undefined)
    return `file ${err.site.fileId} chunk ${err.site.chunkIndex ?? '-'}`;
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** Negative errno for the FUSE reply, and whether the error deserves a log line. */
export function toErrno(err: unknown): { errno: number; log: boolean } {
  if (err instanceof FsError) return { errno: -err.errno, log: false };
  const code = (err as { code?: unknown } | null)?.code;
  // LayoutError / ConfigError carry code 'EINVAL'; Node system errors carry their own codes.
  if (typeof code === 'string' && ERRNO[code] !== undefined) {
    return { errno: -ERRNO[code], log: !(code === 'EINVAL' || code === 'ENOSPC') };
  }
  if (err instanceof UnrecoverableError) return { errno: -ERRNO.EIO, log: true };
  return { errno: -ERRNO.EIO, log: true };
}
