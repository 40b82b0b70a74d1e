// Directory entry name rules (POSIX): 1..255 bytes, no '/', no NUL, not '.' or '..'.
import { FsError } from '../fs-error';

export const NAME_BYTES_MAX = 255;
export const SYMLINK_BYTES_MAX = 4096;

export function checkName(name: string): void {
  if (typeof name !== 'string' || name.length === 0) throw new FsError('EINVAL', 'empty name');
  if (Buffer.byteLength(name, 'utf8') > NAME_BYTES_MAX)
    throw new FsError('ENAMETOOLONG', `name longer than ${NAME_BYTES_MAX} bytes`);
  if (name.includes('/') || name.includes('\0')) throw new FsError('EINVAL', `name '${name}' contains '/' or NUL`);
  if (name === '.' || name === '..') throw new FsError('EINVAL', `'${name}' cannot be created, removed or renamed`);
}
