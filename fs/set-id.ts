// Set-user-ID and set-group-ID bits across changes by users (Linux rules; xfstests generic/375,
// 683-685). The kernel clears them itself only in part: without
// FUSE_HANDLE_KILLPRIV (libfuse 3.14 has no KILLPRIV_V2) a write, truncate or fallocate by a
// caller without CAP_FSETID makes it send a setattr that drops set-user-ID and set-group-ID with
// group-execute, or an empty setattr when only a set-group-ID it would drop for a writer outside
// the file's group is left (fs/fuse/fuse3-ops.ts passes the caller). And an access ACL sets the
// mode here (fs/acl.ts), so the check chmod(2) makes is made here too. uid 0 stands for
// CAP_FSETID: the request carries no capabilities.
import { readFileSync } from 'node:fs';
import type { Caller } from './types';

const S_ISUID = 0o4000;
const S_ISGID = 0o2000;
export const SET_ID_BITS = S_ISUID | S_ISGID;
const S_IXGRP = 0o0010;

/**
 * The mode a non-directory keeps when its owner or group changes (chown(2), Linux): set-user-ID
 * goes; set-group-ID goes only with group-execute, since without it the bit marks mandatory
 * locking and stays. The kernel already sends this mode when a bit has to go (FUSE setattr with
 * ATTR_MODE); applied here too for a chown that comes without one.
 */
export function modeAfterChown(mode: number): number {
  let m = mode & ~S_ISUID;
  if ((m & (S_ISGID | S_IXGRP)) === (S_ISGID | S_IXGRP)) m &= ~S_ISGID;
  return m & 0o7777;
}

/** The caller's supplementary groups (/proc, as libfuse's fuse_req_getgroups); none if it is gone. */
function groupsOf(pid: number): number[] {
  if (!(pid > 0)) return [];
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Groups:'));
    return line === undefined
      ? []
      : line
          .slice('Groups:'.length)
          .trim()
          .split(/\s+/)
          .filter((s) => s !== '')
          .map(Number);
  } catch {
    return []; // exited meanwhile: treated as outside the group (the bit goes, the safe side)
  }
}

/** in_group_or_capable(): the caller is in group gid (its fsgid or a supplementary group), or root. */
export function inGroupOrCapable(caller: Caller, gid: number): boolean {
  return caller.uid === 0 || caller.gid === gid || groupsOf(caller.pid).includes(gid);
}

/**
 * The mode of a regular file after a write, truncate or fallocate by caller (the kernel's
 * setattr_should_drop_suidgid): set-user-ID always goes, set-group-ID with group-execute or when
 * the caller is outside the file's group; a caller with CAP_FSETID (root) keeps both.
 */
export function modeAfterWrite(mode: number, gid: number, caller: Caller): number {
  if (caller.uid === 0 || (mode & (S_ISUID | S_ISGID)) === 0) return mode & 0o7777;
  let m = mode & ~S_ISUID;
  if ((m & S_ISGID) !== 0 && ((m & S_IXGRP) !== 0 || !inGroupOrCapable(caller, gid))) m &= ~S_ISGID;
  return m & 0o7777;
}

/** A mode set by caller (chmod, an access ACL): set-group-ID goes unless it is in group gid (setattr_prepare). */
export function modeSetBy(mode: number, gid: number, caller: Caller): number {
  if ((mode & S_ISGID) === 0 || inGroupOrCapable(caller, gid)) return mode & 0o7777;
  return mode & ~S_ISGID & 0o7777;
}
