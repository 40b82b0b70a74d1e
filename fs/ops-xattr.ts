// Extended attributes: the user.* namespace (including user.chunkfs.layout, validated by the
// namespace: EINVAL for a bad layout). Other namespaces are not stored: reads find nothing (so the
// kernel's security.capability probe on every write stays cheap) and writes are refused.
import type { FsCore } from './core';
import { posix } from './errno';

const USER_PREFIX = 'user.';
const XATTR_VALUE_BYTES_MAX = 64 * 1024; // Linux XATTR_SIZE_MAX

export function getxattr(core: FsCore, path: string, name: string): Buffer | null {
  if (!name.startsWith(USER_PREFIX)) return null; // ENODATA
  return core.ns.getxattr(core.resolve(path).ino, name);
}

export function setxattr(core: FsCore, path: string, name: string, value: Buffer, flags: number): void {
  if (!name.startsWith(USER_PREFIX)) throw posix('EOPNOTSUPP', `${name}: only user.* attributes are supported`);
  if (value.length > XATTR_VALUE_BYTES_MAX) throw posix('E2BIG', `${name}: value too large`);
  core.ns.setxattr(core.resolve(path).ino, name, Buffer.from(value), flags);
}

export function listxattr(core: FsCore, path: string): string[] {
  return core.ns.listxattr(core.resolve(path).ino);
}

export function removexattr(core: FsCore, path: string, name: string): void {
  if (!name.startsWith(USER_PREFIX)) throw posix('EOPNOTSUPP', `${name}: only user.* attributes are supported`);
  core.ns.removexattr(core.resolve(path).ino, name);
}
