// Error -> FUSE reply. Typed store errors carry their POSIX code; anything else is a bug or an
// unrecoverable read and answers EIO, logged with its site so it can be traced (DESIGN §6).
import { constants } from 'node:os';
import { FsError } from '../store/fs-error';
import { UnrecoverableError } from '../src/errors';

const ERRNO = constants.errno as Record<string, number>;

/** A POSIX failure raised inside fs/ itself (bad flags, bad handle, permission). */
export class PosixError extends Error {
  readonly errno: number;
  constructor(readonly code: string, message: string) {
    super(`${code}: ${message}`);
    this.errno = ERRNO[code] ?? ERRNO.EIO;
  }
}

export function posix(code: string, message: string): PosixError {
  return new PosixError(code, message);
}

/** One log line for an error: its name, message and the frame that threw (no stack dump). */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err).replace(/\s+/g, ' ');
  const site = err.stack?.split('\n').find((l) => l.trimStart().startsWith('at '))?.trim();
  const text = `${err.name}: ${err.message}`.replace(/\s+/g, ' ');
  return site === undefined ? text : `${text} (${site})`;
}

/** Negative errno for the FUSE reply, and whether the error deserves a log line. */
export function toErrno(err: unknown): { errno: number; log: boolean } {
  if (err instanceof PosixError || err instanceof FsError) return { errno: -err.errno, log: false };
  const code = (err as { code?: unknown } | null)?.code;
  // LayoutError / ConfigError carry code 'EINVAL'; Node system errors carry their own codes.
  if (typeof code === 'string' && ERRNO[code] !== undefined) {
    return { errno: -ERRNO[code], log: !(code === 'EINVAL' || code === 'ENOSPC') };
  }
  if (err instanceof UnrecoverableError) return { errno: -ERRNO.EIO, log: true };
  return { errno: -ERRNO.EIO, log: true };
}
