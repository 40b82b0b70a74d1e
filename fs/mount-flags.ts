// The set-id and device mount flags. Mounted by root, chunkfs behaves like other
// root mounts (ext4, xfs): set-id binaries run and device files can be opened, unless -o nosuid /
// nodev says otherwise. Mounted by another user, the kernel (through fusermount3) allows neither.
//
// Both transports mount through fusermount3 when auto_unmount is on (libfuse hands it the mount), and
// fusermount3 always starts from MS_NOSUID | MS_NODEV: libfuse (3.14 and 2.9) passes it only the flags
// that are on, never "suid" or "dev". So after the mount, root lifts them with a bind remount, which
// changes only the mount point's flags (the file system is not asked) and keeps the others (ro, atime).
import { execFile } from 'node:child_process';

/** mount(8) answers at once; a stuck one must not hold the mount's start forever. */
const REMOUNT_TIMEOUT_MS = 10_000;

export interface SetIdFlags {
  suid: boolean;
  dev: boolean;
}

/** The flags a mount gets: as asked, else on for root and off for anyone else. */
export function setIdDefaults(asked: Partial<SetIdFlags>, root: boolean): SetIdFlags {
  const suid = asked.suid ?? root;
  const dev = asked.dev ?? root;
  if (!root && (suid || dev))
    throw new Error(`-o ${suid ? 'suid' : 'dev'} needs root (a mount by another user is always nosuid,nodev)`);
  return { suid, dev };
}

/** The mount options of a bind remount that sets exactly these two flags. */
export function remountOptions(f: SetIdFlags): string {
  return `remount,bind,${f.suid ? 'suid' : 'nosuid'},${f.dev ? 'dev' : 'nodev'}`;
}

/**
 * Lift nosuid / nodev from a fresh mount (root only). Runs mount(8) as a child process: it stats the
 * mount point, a request this process must stay free to answer. On failure the mount stays nosuid,
 * nodev (the safe side) and one line says so.
 */
export function applySetIdFlags(mountpoint: string, f: SetIdFlags, log: (m: string) => void): Promise<void> {
  return new Promise((resolve) => {
    execFile('mount', ['-o', remountOptions(f), mountpoint], { timeout: REMOUNT_TIMEOUT_MS }, (err, _out, stderr) => {
      if (err !== null)
        log(
          `${mountpoint} stays nosuid,nodev: mount -o ${remountOptions(f)} failed: ${String(stderr).trim() || err.message}`,
        );
      resolve();
    });
  });
}
