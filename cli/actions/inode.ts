// What the metadata says of one inode: its committed size and, for a small file, where
// its needle is. Through the live mount's control socket when the store is mounted (the mount holds
// meta.db exclusively: store/meta/sqlite/database.ts), else from a read-only open. Used by `chunkfs inspect` and tests.
import { Action, ActionEnv, ActionError } from './env';
import { regularFileIno } from './file-path';

/** ino, or path: a regular file by its path inside the filesystem (cli/actions/file-path.ts). */
export interface InodeArgs {
  ino?: number;
  path?: string;
}

export interface InodeResult {
  ino: number;
  /** The size in the metadata: what is committed, not what a live mount still buffers. */
  committedSizeBytes: number;
  needle: { containerIno: number; chunkIndex: number; offsetBytes: string; lengthBytes: number } | null;
  /** The file's layout with its transforms (what getfattr user.chunkfs.layout shows). */
  layout: string;
}

export const inodeAction: Action = {
  storeAccess: () => 'read',
  /** null: no such inode (deleted, or never made). */
  async run(env: ActionEnv, args: unknown): Promise<InodeResult | null> {
    const a = args as InodeArgs;
    const ino = a.path !== undefined ? regularFileIno(env.store, a.path) : a.ino;
    if (typeof ino !== 'number' || !Number.isSafeInteger(ino)) throw new ActionError('name an inode number or a path');
    const attr = env.store.ns.getattr(ino);
    if (attr === null) return null;
    return {
      ino,
      committedSizeBytes: attr.sizeBytes,
      needle: attr.type === 'file' ? env.store.needleOf(ino) : null,
      layout: attr.layout,
    };
  },
};
