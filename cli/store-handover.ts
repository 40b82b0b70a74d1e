// A mount right after an unmount of the same store: umount(8) returns as soon
// as the kernel detaches the mount, while the old mount process still flushes and holds the store
// lock (store/store-lock.ts) for a second or two. A new mount waits for such a holder: one whose
// lock says it is a mount, and whose mount is gone from the mount table. A store held by a live
// mount, or by any other command, is refused at once as before.
import { StoreLockedError } from '../store/store-lock';
import { chunkfsMounts } from './mounts';

/** How long a new mount waits for an unmounted holder to finish and let go of the store. */
export const HANDOVER_WAIT_MS = 30_000;
const HANDOVER_POLL_MS = 100;

/** The lock note of a mount (store/store-lock.ts): what `chunkfs mount` holds a store for. */
export function mountNote(mountpoint: string): string {
  return `mount ${mountpoint}`;
}

/**
 * The holder is a mount whose mount the kernel has detached (it is finishing: flush, close). A
 * holder on another host is never: its mounts are not in this host's /proc/mounts.
 */
export function holderUnmounted(err: unknown, storeDir: string): boolean {
  if (!(err instanceof StoreLockedError) || !err.holderNote.startsWith('mount ') || err.holderHost !== null)
    return false;
  const mountpoint = err.holderNote.slice('mount '.length);
  return !chunkfsMounts().some((m) => m.mountpoint === mountpoint || m.source === storeDir);
}

/**
 * open(), retried while the store is held by an unmounted mount that is still finishing, for at
 * most HANDOVER_WAIT_MS (one log line); any other failure, and a holder still there then, is thrown.
 */
export async function openAfterHandover<T>(
  storeDir: string,
  open: () => Promise<T>,
  log: (line: string) => void,
): Promise<T> {
  let told = false;
  for (let waitedMs = 0; ; waitedMs += HANDOVER_POLL_MS) {
    try {
      return await open();
    } catch (err) {
      if (waitedMs >= HANDOVER_WAIT_MS || !holderUnmounted(err, storeDir)) throw err;
      if (!told) {
        const e = err as StoreLockedError;
        log(
          `store ${storeDir} is still held by pid ${e.holderPid}, unmounted from ${e.holderNote.slice('mount '.length)} and finishing; waiting up to ${HANDOVER_WAIT_MS / 1000} s`,
        );
        told = true;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, HANDOVER_POLL_MS));
  }
}
