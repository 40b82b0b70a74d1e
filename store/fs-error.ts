// POSIX errors: the one type for every POSIX failure, raised by the store's namespace and file
// operations and by the filesystem core in fs/ (bad handle, flags, permission); the transports turn
// `errno` into the FUSE reply (fs/errno.ts). Typed (src/errors.ts style), never a bare Error.
import { constants } from 'node:os';
import { ChunkfsError, ErrorSite } from '../src/errors';

export type FsErrorCode =
  | 'ENOENT'
  | 'EEXIST'
  | 'ENOTEMPTY'
  | 'ENOTDIR'
  | 'EISDIR'
  | 'EINVAL'
  | 'ENODATA'
  | 'ENAMETOOLONG'
  | 'EXDEV'
  | 'EPERM'
  | 'EIO'
  | 'ENOSPC'
  | 'ERANGE'
  | 'EBUSY'
  | 'EMLINK'
  | 'EFBIG'
  | 'EROFS'
  | 'ENOTSUP'
  | 'EACCES'
  | 'EBADF'
  | 'ENFILE'
  | 'EOPNOTSUPP'
  | 'EOVERFLOW'
  | 'ESTALE'
  | 'ENOSYS'
  | 'ENXIO'
  | 'E2BIG'
  | 'ELOOP'
  | 'EAGAIN'
  | 'EMFILE';

export class FsError extends ChunkfsError {
  readonly code: FsErrorCode;
  /** Positive errno number (Linux), e.g. 2 for ENOENT. */
  readonly errno: number;
  constructor(code: FsErrorCode, message: string, site: ErrorSite = {}) {
    super(`${code}: ${message}`, site);
    this.code = code;
    this.errno = (constants.errno as Record<string, number>)[code] ?? constants.errno.EIO;
  }
}
