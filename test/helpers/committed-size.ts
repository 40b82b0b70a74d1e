// The size a live mount has committed for a file, asked through its control socket (the mount holds
// meta.db exclusively, DESIGN §4): what a kill -9 of the mount leaves, so tests wait for it, never
// for a time (DESIGN §5: a group commit is the point a file's bytes survive the mount's death).
import { runAction } from '../../cli/run-action';
import { MountReplyError } from '../../cli/control/client';
import type { InodeArgs, InodeResult } from '../../cli/actions/inode';
import { until } from './until';

/** The committed size of store's file at names (path parts below the root); null when it has no name yet. */
export async function committedSize(store: string, names: string[]): Promise<number | null> {
  const { result } = await runAction(
    { storeDir: store, mountpoint: null },
    'inode',
    { path: names.join('/') } satisfies InodeArgs,
    () => undefined,
  ).catch((err: Error) => {
    if (err instanceof MountReplyError && /no such file/.test(err.message)) return { result: null };
    throw err;
  });
  return (result as InodeResult | null)?.committedSizeBytes ?? null;
}

/** Resolves with the committed size once it is at least atLeastBytes; throws naming the file if never. */
export async function untilCommitted(store: string, names: string[], atLeastBytes: number): Promise<number> {
  let size: number | null = null;
  await until(
    async () => {
      size = await committedSize(store, names);
      return size !== null && size >= atLeastBytes;
    },
    `commit of ${atLeastBytes} bytes of ${names.join('/')}`,
    () => `(committed: ${size})`,
  );
  return size ?? 0;
}
