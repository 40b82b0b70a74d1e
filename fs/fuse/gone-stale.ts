// A follower (DESIGN §9) is asked about an inode the kernel found earlier, by number (fuse3) or by
// an open handle (fuse-native), that the writer has removed since (a file replaced by rename, say):
// ESTALE, not ENOENT, as NFS answers, so the kernel looks the name up again (an open retries its
// walk with LOOKUP_REVAL) and a reader of an open descriptor learns its file is gone elsewhere. A
// name that is not there stays ENOENT.
import { constants } from 'node:os';
import type { FsCore } from '../core';

const { ENOENT, ESTALE } = constants.errno;

/** errno (positive) as a follower answers it for an op that named its inode by number or handle. */
export function staleIfGone(core: FsCore, errno: number): number {
  return errno === ENOENT && core.followsWriter ? ESTALE : errno;
}
