// The auto_unmount guard: a small process (native/fuse3/unmount_guard.cc) that holds this
// mount's end of fusermount3's socket until this process has wholly exited. fusermount3 unmounts a
// dead mount when that socket closes, but only if open() of the mount point then fails ENOTCONN.
// Killed with SIGKILL, this process released the socket before /dev/fuse, and under load
// fusermount3 ran in between: its open() reached the still-connected, dying connection, failed
// ECONNABORTED once the connection was aborted, and the mount stayed (traced in 1 of 10 loaded
// kill -9 runs). The guard closes the socket only after every descriptor of
// this process is released, so fusermount3 always finds the connection aborted.
import { spawn } from 'node:child_process';
import { closeSync, existsSync } from 'node:fs';
import * as path from 'node:path';
import type { Fuse3Native, Session } from './fuse3-native';

const GUARD_NAME = 'chunkfs_unmount_guard';

/** Starts the guard beside addonPath's build; says why not through log (the mount then works as before). */
export function startUnmountGuard(
  native: Fuse3Native,
  session: Session,
  addonPath: string,
  log: (m: string) => void,
): void {
  const guard = path.join(path.dirname(addonPath), GUARD_NAME);
  if (!existsSync(guard)) {
    log(`${guard} missing (run \`npm run setup\`): a crash may leave the mount to be unmounted by hand`);
    return;
  }
  const fds = native.unmountGuardFds(session);
  if (typeof fds === 'string') {
    log(`no auto_unmount guard: ${fds}`);
    return;
  }
  const [pidfd, socket] = fds;
  try {
    // Descriptor 3: the pidfd, 4: the socket (the guard's contract); its own session, so a
    // terminal's Ctrl-C to the mount's process group does not end it before the mount.
    const child = spawn(guard, [], { stdio: ['ignore', 'ignore', 'ignore', pidfd, socket], detached: true });
    child.on('error', (err) => log(`auto_unmount guard: ${err.message}`));
    child.unref();
  } finally {
    closeSync(pidfd);
  }
}
