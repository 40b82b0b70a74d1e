// POSIX ACLs: system.posix_acl_access and system.posix_acl_default stored as
// xattrs, in the kernel's binary form (version 2, then 8-byte entries: u16 tag, u16 perm, u32 id).
// With libfuse3's FUSE_CAP_POSIX_ACL the kernel caches the ACLs and enforces them; the file system
// keeps the mode in step with the access ACL, updates the ACL on chmod, and makes a new inode inherit
// its directory's default ACL (umask is then not applied; without one the file system applies the
// umask itself, as the kernel leaves it to us: FUSE_CAP_DONT_MASK). Transports without the
// capability (fuse-native, libfuse 2) refuse the names with EOPNOTSUPP, as the kernel does there.
import type { FsCore } from './core';
import { posix } from './errno';
import { modeSetBy } from './set-id';
import type { Caller } from './types';

export const ACL_ACCESS = 'system.posix_acl_access';
export const ACL_DEFAULT = 'system.posix_acl_default';
export const ACL_PREFIX = 'system.posix_acl_';

const ACL_VERSION = 2;
const HEADER_BYTES = 4;
const ENTRY_BYTES = 8;
/** An ACL the kernel accepts has at most this many entries (XATTR_SIZE_MAX / 8, rounded down). */
const ENTRIES_MAX = 8191;
const TAG = { userObj: 0x01, user: 0x02, groupObj: 0x04, group: 0x08, mask: 0x10, other: 0x20 } as const;
const VALID_TAGS = new Set<number>(Object.values(TAG));
const PERMS = 0o7;
const XATTR_CREATE = 1;

export interface AclEntry {
  tag: number;
  perm: number;
  id: number;
}

export function isAclName(name: string): boolean {
  return name === ACL_ACCESS || name === ACL_DEFAULT;
}

/** The entries of an ACL xattr value; EINVAL for anything the kernel would not have sent. */
export function parseAcl(value: Buffer): AclEntry[] {
  if (value.length < HEADER_BYTES || (value.length - HEADER_BYTES) % ENTRY_BYTES !== 0)
    throw posix('EINVAL', `ACL of ${value.length} bytes`);
  if (value.readUInt32LE(0) !== ACL_VERSION) throw posix('EINVAL', `ACL version ${value.readUInt32LE(0)}`);
  const count = (value.length - HEADER_BYTES) / ENTRY_BYTES;
  if (count > ENTRIES_MAX) throw posix('EINVAL', `ACL of ${count} entries`);
  const out: AclEntry[] = [];
  for (let i = 0; i < count; i++) {
    const at = HEADER_BYTES + i * ENTRY_BYTES;
    const e = { tag: value.readUInt16LE(at), perm: value.readUInt16LE(at + 2), id: value.readUInt32LE(at + 4) };
    if (!VALID_TAGS.has(e.tag) || (e.perm & ~PERMS) !== 0)
      throw posix('EINVAL', `ACL entry ${i}: tag ${e.tag} perm ${e.perm}`);
    out.push(e);
  }
  for (const tag of [TAG.userObj, TAG.groupObj, TAG.other]) {
    if (out.filter((e) => e.tag === tag).length !== 1)
      throw posix('EINVAL', `ACL without exactly one entry of tag ${tag}`);
  }
  return out;
}

export function encodeAcl(entries: AclEntry[]): Buffer {
  const out = Buffer.alloc(HEADER_BYTES + entries.length * ENTRY_BYTES);
  out.writeUInt32LE(ACL_VERSION, 0);
  entries.forEach((e, i) => {
    const at = HEADER_BYTES + i * ENTRY_BYTES;
    out.writeUInt16LE(e.tag, at);
    out.writeUInt16LE(e.perm, at + 2);
    out.writeUInt32LE(e.id, at + 4);
  });
  return out;
}

/** The group class entry: the mask when there is one, else the owning group (POSIX.1e). */
function groupClass(entries: AclEntry[]): AclEntry {
  return entries.find((e) => e.tag === TAG.mask) ?? entries.find((e) => e.tag === TAG.groupObj)!;
}

/** rwxrwxrwx of an access ACL. */
export function permBitsOf(entries: AclEntry[]): number {
  const owner = entries.find((e) => e.tag === TAG.userObj)!.perm;
  const other = entries.find((e) => e.tag === TAG.other)!.perm;
  return (owner << 6) | (groupClass(entries).perm << 3) | other;
}

/** An ACL the mode says all of (owner, group, other only): stored as the mode alone, as ext4 does. */
function isMinimal(entries: AclEntry[]): boolean {
  return entries.every((e) => e.tag === TAG.userObj || e.tag === TAG.groupObj || e.tag === TAG.other);
}

/** The access ACL with its owner, group class and other entries set from mode's permission bits. */
function withMode(entries: AclEntry[], mode: number): AclEntry[] {
  const g = groupClass(entries);
  return entries.map((e) => {
    if (e.tag === TAG.userObj) return { ...e, perm: (mode >> 6) & PERMS };
    if (e === g) return { ...e, perm: (mode >> 3) & PERMS };
    if (e.tag === TAG.other) return { ...e, perm: mode & PERMS };
    return e;
  });
}

function aclOf(core: FsCore, ino: number, name: string): AclEntry[] | null {
  const value = core.ns.findxattr(ino, name); // chmod and create ask: most inodes have none
  return value === null ? null : parseAcl(value);
}

function refuseWithoutAcls(core: FsCore, name: string): void {
  if (!core.posixAcl) throw posix('EOPNOTSUPP', `${name}: POSIX ACLs need the libfuse3 transport`);
}

/**
 * setxattr of an ACL name: an access ACL also sets the mode (set-group-ID goes when the caller is
 * outside the file's group: fs/set-id.ts, generic/375); one the mode says all of is not stored.
 */
export function setAcl(core: FsCore, ino: number, name: string, value: Buffer, flags: number, caller?: Caller): void {
  refuseWithoutAcls(core, name);
  const entries = parseAcl(value);
  const a = core.ns.attr(ino);
  if (name === ACL_DEFAULT && a.type !== 'dir') throw posix('EACCES', 'a default ACL is for directories only');
  if (name === ACL_ACCESS) {
    const perms = (a.mode & ~0o777) | permBitsOf(entries);
    const mode = caller === undefined ? perms : modeSetBy(perms, a.gid, caller) | (perms & ~0o7777);
    if (mode !== a.mode) core.ns.setattr(ino, { mode: mode & 0o7777 });
    if (isMinimal(entries)) {
      if (aclOf(core, ino, name) !== null) core.ns.removexattr(ino, name);
      return;
    }
  }
  core.ns.setxattr(ino, name, encodeAcl(entries), flags);
}

export function getAcl(core: FsCore, ino: number, name: string): Buffer {
  refuseWithoutAcls(core, name);
  return core.ns.getxattr(ino, name); // ENODATA when none: the kernel then shows the mode
}

export function removeAcl(core: FsCore, ino: number, name: string): void {
  refuseWithoutAcls(core, name);
  core.ns.removexattr(ino, name);
}

/** chmod: the access ACL follows the new mode (the kernel drops its cached ACLs after a setattr). */
export function chmodAcl(core: FsCore, ino: number, mode: number): void {
  if (!core.posixAcl) return;
  const entries = aclOf(core, ino, ACL_ACCESS);
  if (entries !== null) core.ns.setxattr(ino, ACL_ACCESS, encodeAcl(withMode(entries, mode)));
}

/** What a new inode under parent gets: its mode, and the ACLs to store on it (applyInherited). */
export interface Inherited {
  mode: number;
  access: AclEntry[] | null;
  dflt: AclEntry[] | null;
}

/**
 * The mode and ACLs of a new inode (POSIX.1e): with a default ACL on the parent, the new access ACL
 * is that ACL with its owner, group class and other entries limited by the requested mode, and a new
 * directory inherits the default ACL too; without one, the umask applies. Without ACL support the
 * kernel has applied the umask already.
 */
export function inherit(core: FsCore, parent: number, mode: number, umask: number, isDir: boolean): Inherited {
  if (!core.posixAcl) return { mode, access: null, dflt: null };
  const d = aclOf(core, parent, ACL_DEFAULT);
  if (d === null) return { mode: mode & ~umask, access: null, dflt: null };
  const g = groupClass(d);
  const access = d.map((e) => {
    if (e.tag === TAG.userObj) return { ...e, perm: e.perm & (mode >> 6) };
    if (e === g) return { ...e, perm: e.perm & (mode >> 3) };
    if (e.tag === TAG.other) return { ...e, perm: e.perm & mode };
    return e;
  });
  return {
    mode: (mode & ~0o777) | permBitsOf(access),
    access: isMinimal(access) ? null : access,
    dflt: isDir ? d : null,
  };
}

/** Store the inherited ACLs on the new inode. */
export function applyInherited(core: FsCore, ino: number, h: Inherited): void {
  if (h.access !== null) core.ns.setxattr(ino, ACL_ACCESS, encodeAcl(h.access), XATTR_CREATE);
  if (h.dflt !== null) core.ns.setxattr(ino, ACL_DEFAULT, encodeAcl(h.dflt), XATTR_CREATE);
}
