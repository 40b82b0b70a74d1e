// `chunkfs umount` returns once the mount process has closed the store (DESIGN §7), as umount of a
// kernel filesystem returns once it is written back: the kernel detaches a FUSE mount at once, while
// its process still flushes, applies, checkpoints meta.db and lets go of the store lock. A command
// run right after the umount (fsck, a backup of the store directory) must find the store closed.
import * as os from 'node:os';
import { lockHolder } from '../store/store-lock';
import { chunkfsMounts } from './mounts';
import { mountNote } from './store-handover';
import { processStopped } from './process-state';

/** How long umount waits for the mount process to close the store. */
export const UMOUNT_CLOSE_WAIT_MS = 60_000;
const UMOUNT_POLL_MS = 50;

/** The mount process holding a store read-write. */
export interface MountHolder {
  storeDir: string;
  pid: number;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The process that serves these mount points (one FUSE connection, read before it is unmounted)
 * and holds storeDir read-write, as its lock says; null when none does (a read-only mount holds no
 * lock, a store on PostgreSQL may be held by another host).
 */
export function mountHolderOf(storeDir: string, mountpoints: string[]): MountHolder | null {
  let holder;
  try {
    holder = lockHolder(storeDir);
  } catch {
    return null; // an unreadable lock: nothing to wait on
  }
  if (holder === null || (holder.host !== null && holder.host !== os.hostname().replace(/\s/g, '_'))) return null;
  // Its lock names its first mount point: one of these, or one unmounted earlier while a bind kept it serving.
  const first = holder.note.startsWith(mountNote('')) ? holder.note.slice(mountNote('').length) : null;
  if (first === null) return null;
  if (!mountpoints.includes(first) && chunkfsMounts().some((m) => m.mountpoint === first)) return null;
  return { storeDir, pid: holder.pid };
}

/**
 * Waits until the holder has let go of the store (its lock released, or its process gone): 'closed';
 * 'timeout' after timeoutMs; 'stopped' at once when the process is stopped (no wait ends that).
 */
export async function waitForClose(
  h: MountHolder,
  timeoutMs = UMOUNT_CLOSE_WAIT_MS,
): Promise<'closed' | 'timeout' | 'stopped'> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let pid: number | null;
    try {
      pid = lockHolder(h.storeDir)?.pid ?? null;
    } catch {
      pid = h.pid; // being rewritten: look again
    }
    if (pid !== h.pid || !alive(h.pid)) return 'closed';
    if (processStopped(h.pid)) return 'stopped';
    if (Date.now() >= deadline) return 'timeout';
    await new Promise((resolve) => setTimeout(resolve, UMOUNT_POLL_MS));
  }
}
