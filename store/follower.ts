// A read-only store that follows another process's writes (DESIGN §9): a `-o ro`
// mount of a PostgreSQL store while the lease holder (on another machine that sees the same disk
// directories) writes. It takes no lock and no lease, replays nothing and writes nothing (its
// session refuses writes, store/meta/postgres/open.ts). The writer's commits arrive by LISTEN
// (store/meta/postgres/listen.ts); each drops every cache of this store and tells the mount which inodes
// changed, so the kernel drops its copies (fs/mount.ts).
//
// Nothing cached here is trusted by a read: caches are the lease holder's (it is the only writer).
// A read takes, in this order, the committed size, then the file's intents from the log, then the
// chunk rows (each from the database, caches dropped first). The writer commits a size together
// with the intents that hold its bytes, and drops intents only after the chunk rows point at shards
// that hold them (DESIGN §5), so in this order a read sees every byte inside the size it uses: in
// the log or in the shards, never a zero or stale byte where the writer's commit put data. A read
// that still fails (a shard the writer reclaimed or patched meanwhile, a needle moved) is tried
// again from the start, up to READ_TRIES times.
import { refusePlainIntent } from './chunks/plain-intent';
import { FsError } from './fs-error';
import type { ChunkEnv } from './chunks/chunk-env';
import type { FileIo } from './file-io';
import type { NamespaceOps } from './meta/ops';
import type { Intent } from './meta/chunk-map';
import { patchedInPlace } from './chunks/chunk-ref';
import { Changed, ChangeListener, listenForChanges } from './meta/engine-open';

/** Tries of one read: the writer may reclaim or patch what a read was reading. */
const READ_TRIES = 3;
/** Who is told of the writer's changes (the mount; a bound on a list that only grows). */
const CHANGE_LISTENERS_MAX = 8;

export type { Changed };

/** The logged intents into the backlog, so reads overlay them (one view, DESIGN §5); nothing is written. */
export function backlogFromLog(env: ChunkEnv, files: FileIo, intents: readonly Intent[]): void {
  for (const i of intents) {
    if (i.span === null) continue;
    const ref = files.chunkRefIfFile(i.ino, i.chunkIndex);
    if (ref === null || ref.version !== i.version) continue;
    refusePlainIntent(ref, i.sealed, { row: i.id });
    env.backlog.add(
      {
        id: i.id,
        ino: i.ino,
        chunkIndex: i.chunkIndex,
        version: i.version,
        firstBlock: i.firstBlock,
        span: i.span,
        inPlace: patchedInPlace(ref),
      },
      ref.fl.bitrotBlockBytes,
    );
  }
}

export class Follower {
  private readonly listener: ChangeListener;
  private readonly listeners: Array<(changed: Changed) => void> = [];

  constructor(
    url: string,
    private readonly env: ChunkEnv,
    private readonly files: FileIo,
    private readonly ns: NamespaceOps,
    log: (line: string) => void,
  ) {
    this.listener = listenForChanges(url, (changed) => this.changed(changed), log);
  }

  /** Listen from now on (throws when it cannot, as the open does). */
  start(): void {
    this.listener.start();
  }

  stop(): void {
    this.listener.stop();
  }

  /** fn hears the inodes each of the writer's commits changed ('all': unknown, e.g. after an outage). */
  onChange(fn: (changed: Changed) => void): void {
    if (this.listeners.length >= CHANGE_LISTENERS_MAX)
      throw new Error(`more than ${CHANGE_LISTENERS_MAX} listeners to the writer's changes`);
    this.listeners.push(fn);
  }

  private changed(changed: Changed): void {
    this.env.map.forgetAll();
    this.files.forgetAll();
    this.env.shards.forgetAll(); // in-place patches changed blocks and their hashes
    for (const fn of this.listeners) fn(changed);
  }

  /** Bytes of ino from offsetBytes into target[targetOffset..], short at the committed size. */
  async readInto(ino: number, offsetBytes: number, target: Buffer, targetOffset: number): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      // Not following (the server is unreachable): the writer's changes are unknown, nothing is served.
      if (!this.listener.connected)
        throw new FsError(
          'EIO',
          `inode ${ino}: not following the writer's commits now (metadata server unreachable); try again`,
        );
      try {
        return await this.readOnce(ino, offsetBytes, target, targetOffset);
      } catch (err) {
        // A missing file or a bad range is an answer; anything else may be the writer's doing meanwhile.
        if (attempt >= READ_TRIES || (err instanceof FsError && err.code !== 'EIO')) throw err;
      }
    }
  }

  private readOnce(ino: number, offsetBytes: number, target: Buffer, targetOffset: number): number | Promise<number> {
    const a = this.ns.attr(ino); // the size first: everything it covers is in the log or the shards from now on
    const slice = a.type === 'file' ? this.files.slices.get(ino) : null;
    const inos = slice === null ? [ino] : [ino, Number(slice.containerId)]; // a small file's bytes: its container's
    for (const i of inos) {
      this.files.forget(i);
      this.env.map.forget(i);
      this.env.backlog.dropInode(i);
    }
    for (const i of inos) backlogFromLog(this.env, this.files, this.env.map.intentsOf(i));
    return this.files.readInto(ino, offsetBytes, target, targetOffset, a.sizeBytes);
  }
}
