// Extended attributes by inode: the user.* namespace (including user.chunkfs.layout, validated by
// the namespace: EINVAL for a bad layout). Other namespaces are not stored: reads find nothing (so
// the kernel's security.capability probe on every write stays cheap) and writes are refused.
// getxattr(2)/listxattr(2) pass the caller's buffer size through: size 0 asks for the bytes needed,
// a smaller buffer is ERANGE. Both are decided here, so every transport answers the same.
// system.posix_acl_access / _default are POSIX ACLs, stored where the kernel enforces them (fs/acl.ts).
import type { FsCore } from './core';
import { posix } from './errno';
import { getAcl, isAclName, removeAcl, setAcl } from './acl';
import type { Caller } from './types';

const USER_PREFIX = 'user.';
/** Name prefixes of the attributes stored; a transport may answer other reads (ENODATA) itself. */
export const STORED_XATTR_PREFIXES: readonly string[] = [USER_PREFIX];
const XATTR_VALUE_BYTES_MAX = 64 * 1024; // Linux XATTR_SIZE_MAX
const XATTR_NAME_BYTES_MAX = 255; // Linux XATTR_NAME_MAX

/** The reply to a sized xattr read: the bytes to return, or for a size probe (0) the bytes needed. */
export type XattrReply = Buffer | number;

function fit(bytes: Buffer, sizeBytes: number, what: string): XattrReply {
  if (sizeBytes === 0) return bytes.length;
  if (bytes.length > sizeBytes) throw posix('ERANGE', `${what}: ${bytes.length} bytes do not fit in ${sizeBytes}`);
  return bytes;
}

function checkName(name: string): void {
  if (Buffer.byteLength(name, 'utf8') > XATTR_NAME_BYTES_MAX)
    throw posix('ERANGE', `attribute name longer than ${XATTR_NAME_BYTES_MAX} bytes`);
}

export function getxattr(core: FsCore, ino: number, name: string, sizeBytes: number): XattrReply {
  checkName(name);
  if (isAclName(name)) return fit(getAcl(core, ino, name), sizeBytes, name);
  if (!name.startsWith(USER_PREFIX)) throw posix('ENODATA', `${name}: only user.* attributes are stored`);
  return fit(core.ns.getxattr(ino, name), sizeBytes, name); // ENODATA when unset
}

export function setxattr(core: FsCore, ino: number, name: string, value: Buffer, flags: number, caller?: Caller): void {
  checkName(name);
  if (isAclName(name)) {
    setAcl(core, ino, name, value, flags, caller);
    return;
  }
  if (!name.startsWith(USER_PREFIX)) throw posix('EOPNOTSUPP', `${name}: only user.* attributes are supported`);
  if (value.length > XATTR_VALUE_BYTES_MAX) throw posix('E2BIG', `${name}: value too large`);
  core.ns.setxattr(ino, name, Buffer.from(value), flags);
}

/** The names as listxattr(2) returns them: each NUL-terminated, back to back. */
export function listxattr(core: FsCore, ino: number, sizeBytes: number): XattrReply {
  const names = core.ns.listxattr(ino);
  return fit(Buffer.from(names.map((n) => `${n}\0`).join(''), 'utf8'), sizeBytes, 'attribute names');
}

export function removexattr(core: FsCore, ino: number, name: string): void {
  checkName(name);
  if (isAclName(name)) {
    removeAcl(core, ino, name);
    return;
  }
  if (!name.startsWith(USER_PREFIX)) throw posix('EOPNOTSUPP', `${name}: only user.* attributes are supported`);
  core.ns.removexattr(ino, name);
}
