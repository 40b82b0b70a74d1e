// A second mount of a store that a live chunkfs mount on this machine already serves (as
// xfstests generic/732). A kernel file system mounted twice from one device shows one superblock at
// both mount points; chunkfs does the same: the second mount point becomes a bind mount of the first
// (mount --bind), so it is the same FUSE connection, both see every change at once, and the one
// mount process stays the store's only writer. That process serves until the last mount point of its
// connection is gone (cli/cli.ts), whichever is unmounted first.
//
// The live mount is asked through its control socket (its mount points, device number and options);
// the bind is made only from a mount point this mount namespace sees with that device number. A mount
// process whose mounts are all gone (finishing) is left to the store lock's wait; one
// whose mounts this namespace does not see (another namespace) is refused.
import { execFile } from 'node:child_process';
import type { MountCliOptions } from './cli-args';
import type { LiveMountStatus, StatusResult } from './actions/status';
import { MountNotAnsweringError, MountReplyError, connectMount, request } from './control/client';
import { bindConflicts, bindFlags, optionTexts } from './bind-options';
import { chunkfsDevAt, connectionMounts } from './mount-info';

const MOUNT_TIMEOUT_MS = 10_000;

/** The second mount cannot be a bind of the live mount: the message says why, for the user. */
export class BindRefusedError extends Error {}

/** mount(8) or umount(8); it stats the mount points: this process serves none, so it may wait for answers. */
function mount8(args: string[], cmd = 'mount'): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: MOUNT_TIMEOUT_MS, encoding: 'utf8' }, (err, _out, stderr) => {
      if (err === null) resolve();
      else reject(new Error(`${cmd} ${args.join(' ')} failed: ${stderr.trim() || err.message}`));
    });
  });
}

/** Undo a bind made here (nothing when it was not made). */
function unbind(mountpoint: string): Promise<void> {
  return mount8(['-l', mountpoint], 'umount').catch(() => undefined);
}

/** The live mount of storeDir as its control socket reports it, or null when none answers. */
async function liveMountStatus(storeDir: string): Promise<LiveMountStatus | null> {
  let status: StatusResult;
  try {
    const link = await connectMount(storeDir);
    if (link === null) return null;
    status = (await request(link, 'status', {}, () => undefined)) as StatusResult;
  } catch (err) {
    // A mount just unmounted closes its socket as it starts to finish: the store lock then waits for
    // it, or refuses it, as for any holder. One that holds the socket and does not answer (stopped,
    // hung) still holds the store: said as such, never waited for or taken over (DESIGN §7).
    if (err instanceof MountReplyError && !(err instanceof MountNotAnsweringError)) return null;
    throw err;
  }
  // A mount of a build without binds reports no device number: it keeps refusing by its lock.
  return status.mount === null || typeof status.mount.dev !== 'string' || !Array.isArray(status.mount.mountpoints)
    ? null
    : status.mount;
}

/**
 * Mount storeDir on mountpoint as a bind of its live mount, when one serves it; returns the ready
 * line, or null when no live mount serves the store here (then it is mounted as usual, and its lock
 * refuses or waits as before). Throws BindRefusedError when the options cannot be a bind's.
 */
export async function bindToLiveMount(
  storeDir: string,
  mountpoint: string,
  asked: MountCliOptions,
  log: (line: string) => void,
): Promise<string | null> {
  const live = await liveMountStatus(storeDir);
  if (live === null || live.mountpoints.length === 0) return null; // finishing: the lock waits for it
  const source = connectionMounts(live.dev!, storeDir)[0];
  const where = `store ${storeDir} is mounted on ${live.mountpoints.join(' and ')} by pid ${live.pid}`;
  if (source === undefined) {
    throw new BindRefusedError(
      `${where}, in another mount namespace: a store is served by one mount process, and that one's mounts are not visible here; unmount it there first`,
    );
  }
  const askedTexts = optionTexts(asked);
  const conflicts = bindConflicts(askedTexts, live.options);
  if (conflicts.length > 0) {
    throw new BindRefusedError(
      `${where}; a second mount of it is a bind of that mount and shares its mount process, so it cannot take ${conflicts.join(', ')}: mount it with the same options (or none), or unmount ${source.mountpoint} first`,
    );
  }
  if (process.getuid?.() !== 0) {
    throw new BindRefusedError(
      `${where}; a second mount point of it is a bind mount, which needs root (mount --bind ${source.mountpoint} ${mountpoint})`,
    );
  }
  const flags = bindFlags(askedTexts, live.options);
  log(
    `${where}: mounting ${mountpoint} as a bind of ${source.mountpoint} (one FUSE connection, one writer; ${flags.join(',')})`,
  );
  try {
    await mount8(['-i', '--bind', source.mountpoint, mountpoint]);
    // The source may have been unmounted between the question and the bind: then the bind shows the
    // directory beneath it, not the store, and the store lock decides (the mount process is finishing).
    if (chunkfsDevAt(mountpoint) !== live.dev) {
      await unbind(mountpoint);
      return null;
    }
    // The bind starts with the source's flags (a remount,ro of the first mount included): set its own.
    await mount8(['-i', '-o', `remount,bind,${flags.join(',')}`, mountpoint]);
  } catch (err) {
    await unbind(mountpoint);
    throw new BindRefusedError(`cannot bind ${mountpoint} to ${source.mountpoint}: ${(err as Error).message}`);
  }
  const transport = live.options.transport?.replace(/^transport=/, '') ?? '?';
  return `chunkfs: mounted ${storeDir} on ${mountpoint} (a bind of ${source.mountpoint}, pid ${live.pid}, transport ${transport}${flags[0] === 'ro' ? ', read-only' : ''})`;
}
