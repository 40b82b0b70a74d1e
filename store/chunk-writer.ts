// The write path of a file (DESIGN §5, issue 3 "Chunk I/O"): pieces of one store.write, each a
// whole-shard write of a fresh version (spec §8.1: new chunks, whole rewrites, every EC partial
// write) or an in-place replica read-modify-write under a durable intent (§8.2), then one chunk
// map commit after the shards are durable, then the old versions are deleted. Runs under the
// inode's lock, taken by store/file-io.ts.
import { assert } from '../src/errors';
import { ChunkEnv } from './chunk-env';
import { ChunkRow } from './chunk-map';
import { ChunkRef, FileLayout } from './chunk-ref';
import { readChunk, writeWholeChunk } from './chunk-io';
import { FsError } from './fs-error';
import { shardCount } from './layout';
import { lazyTransaction, nowNs } from './meta';
import { boundedAll } from './bounded';
import { CHUNKS_IN_FLIGHT_MAX } from './range-read';
import { RmwFailed, blockSpan, rmwReplica } from './replica-chunk';
import { PastSize } from './past-size';

type Row = Record<string, bigint | string | null>;

/** What the writer needs of store/file-io.ts: chunk refs with their placement. */
export interface ChunkRefs {
  ref(ino: number, fl: FileLayout, chunkIndex: number, version: bigint, logicalLenBytes: number): ChunkRef;
  liveRef(ino: number, fl: FileLayout, row: ChunkRow | null): ChunkRef | null;
}

/** One piece of a write: a chunk, the bytes for it, and the version reserved for it (0n: in-place RMW). */
interface Plan {
  c: number;
  offIn: number;
  bytes: Uint8Array;
  old: ChunkRef | null;
  version: bigint;
  /** The committed write intent of an in-place RMW (DESIGN §5), else null. */
  intentId: number | null;
}

/** A chunk version whose shards are durable, waiting for the chunk map commit (version 0n: an in-place RMW, only its intent to remove). */
interface Commit {
  chunkIndex: number;
  version: bigint;
  logicalLenBytes: number;
  failed: number[];
  old: ChunkRef | null;
  resolvesIntent: number | null; // an RMW intent left open that this copy-on-write supersedes
}

export class ChunkWriter {
  private readonly q;
  private readonly pastSize: PastSize;

  constructor(private readonly env: ChunkEnv, private readonly host: ChunkRefs) {
    const db = env.db;
    this.pastSize = new PastSize(db);
    this.q = {
      info: db.prepare('SELECT layout, size FROM inodes WHERE ino = ?'),
      grow: db.prepare('UPDATE inodes SET size = max(size, ?), mtime_ns = ?, ctime_ns = ? WHERE ino = ? RETURNING size'),
      touch: db.prepare('UPDATE inodes SET mtime_ns = ?, ctime_ns = ? WHERE ino = ?'),
    };
  }

  /** Does this piece become a fresh chunk version (else: in-place replica RMW)? */
  private needsVersion(fl: FileLayout, old: ChunkRef | null, offIn: number, endIn: number): boolean {
    if (old === null || (offIn === 0 && endIn >= old.logicalLenBytes)) return true;
    return !(fl.layout.kind === 'replica' && endIn <= old.logicalLenBytes);
  }

  /**
   * Versions for all pieces are reserved in one transaction, the chunks are written
   * (bounded concurrency), and every chunk map change commits in one transaction
   * after its shards are durable (DESIGN §5); then the old versions are deleted.
   * Pieces that failed are not committed; the first error is rethrown.
   * sizeBytes: the size to commit (DESIGN §5 prefix rule: the caller's first byte still held only
   * in memory); null: the end of the pieces. The size never grows past a piece that failed.
   */
  async writePieces(ino: number, fl: FileLayout, pieces: Array<{ c: number; offIn: number; bytes: Uint8Array }>, sizeBytes: number | null): Promise<void> {
    const plans: Plan[] = pieces.map((p) => ({ ...p, old: this.host.liveRef(ino, fl, this.env.map.get(ino, p.c)), version: 0n, intentId: null }));
    this.reserve(ino, fl, plans);
    const commits: Commit[] = [];
    const at = (p: { c: number; offIn: number }): number => p.c * fl.chunkSizeBytes + p.offIn;
    let sizeTo = sizeBytes ?? plans.reduce((end, p) => Math.max(end, at(p) + p.bytes.length), 0);
    let firstError: unknown = null;
    await boundedAll(plans, CHUNKS_IN_FLIGHT_MAX, async (p) => {
      try {
        commits.push(await this.writePiece(ino, fl, p));
      } catch (err) {
        firstError ??= err;
        sizeTo = Math.min(sizeTo, at(p)); // a prefix: never over bytes that were not stored
      }
    });
    if (firstError === null && commits.length > 0 && commits.every((c) => c.version === 0n && c.resolvesIntent !== null && c.failed.length === 0)
      && sizeTo <= this.sizeOf(ino)) {
      // Only finished in-place RMWs and no size to commit: mtime committed with the intents, so
      // removing the intents need not be durable (store/meta.ts lazyTransaction): one flush less.
      lazyTransaction(this.env.db, () => { for (const c of commits) this.env.map.removeIntent(c.resolvesIntent!); });
      return;
    }
    if (commits.length > 0) this.commit(ino, fl, commits, sizeTo);
    for (const c of commits) {
      if (c.old !== null) await this.env.shards.deleteChunk(c.old, shardCount(fl.layout));
    }
    if (firstError !== null) throw firstError;
  }

  /**
   * One durable transaction before any shard is touched: a fresh version for each piece that is
   * written whole, and for each in-place RMW its write intent (DESIGN §5) with the new mtime/ctime.
   */
  private reserve(ino: number, fl: FileLayout, plans: Plan[]): void {
    this.env.db.transaction(() => {
      let rmw = false;
      for (const p of plans) {
        if (this.needsVersion(fl, p.old, p.offIn, p.offIn + p.bytes.length)) {
          p.version = this.env.map.allocVersion(ino, p.c);
          continue;
        }
        const s = blockSpan(p.old!, p.offIn, p.bytes.length);
        p.intentId = this.env.map.addIntent(ino, p.c, p.old!.version, s.first, s.last);
        rmw = true;
      }
      if (rmw) {
        const t = nowNs();
        this.q.touch.run(t, t, ino);
      }
    })();
  }

  private sizeOf(ino: number): number {
    const r = this.q.info.get(ino) as Row | undefined;
    return r === undefined ? 0 : Number(r.size);
  }

  /**
   * The chunk map commit of the written pieces, after their shards are durable (DESIGN §5), with the
   * size grown to at most sizeTo; chunk bytes left past the size are noted for recovery (past-size.ts).
   */
  private commit(ino: number, fl: FileLayout, commits: Commit[], sizeTo: number): void {
    this.env.db.transaction(() => {
      // The layout may change only while a file holds no data (store/xattrs.ts); a
      // change that raced this first write would leave shards under the old layout.
      const now = this.q.info.get(ino) as Row | undefined;
      if (now === undefined || String(now.layout) !== fl.layout.text) throw new FsError('EBUSY', `inode ${ino} changed layout during a write`);
      for (const c of commits) {
        if (c.resolvesIntent !== null) this.env.map.removeIntent(c.resolvesIntent);
        if (c.version === 0n) continue; // an in-place RMW: nothing to repoint
        this.env.map.setLive(ino, c.chunkIndex, c.version, c.logicalLenBytes);
        for (const i of c.failed) this.env.map.queueHeal(ino, c.chunkIndex, c.version, i, 'write failed on this shard');
      }
      const t = nowNs();
      const { size } = this.q.grow.get(sizeTo, t, t, ino) as { size: bigint };
      this.pastSize.note(ino, fl.chunkSizeBytes, Number(size));
    })();
  }

  private async writePiece(ino: number, fl: FileLayout, p: Plan): Promise<Commit> {
    const { c, offIn, bytes, old } = p;
    const endIn = offIn + bytes.length;
    if (old === null) {
      if (offIn === 0) return this.writeVersion(ino, fl, c, p.version, null, bytes); // no copy: the common sequential write
      const content = Buffer.alloc(endIn); // the hole before offIn reads as zeros
      content.set(bytes, offIn);
      return this.writeVersion(ino, fl, c, p.version, null, content);
    }
    if (offIn === 0 && endIn >= old.logicalLenBytes) return this.writeVersion(ino, fl, c, p.version, old, bytes);
    if (p.version === 0n) {
      const intentId = p.intentId!;
      try {
        await rmwReplica(this.env, old, offIn, bytes, intentId);
        return { chunkIndex: c, version: 0n, logicalLenBytes: old.logicalLenBytes, failed: [], old: null, resolvesIntent: intentId };
      } catch (err) {
        if (!(err instanceof RmwFailed)) {
          this.env.map.removeIntent(intentId); // no replica was touched
          throw err;
        }
        // A replica could not be patched: rewrite the chunk as a fresh version instead.
        const commit = await this.cow(ino, fl, c, this.env.map.allocVersion(ino, c), old, offIn, bytes);
        return { ...commit, resolvesIntent: err.openIntentId };
      }
    }
    return this.cow(ino, fl, c, p.version, old, offIn, bytes);
  }

  /** Copy-on-write: old chunk bytes + the new ones, as a fresh version (DESIGN §5). */
  private async cow(ino: number, fl: FileLayout, c: number, version: bigint, old: ChunkRef, offIn: number, bytes: Uint8Array): Promise<Commit> {
    const endIn = offIn + bytes.length;
    const content = Buffer.alloc(Math.max(old.logicalLenBytes, endIn));
    (await readChunk(this.env, old, 0, old.logicalLenBytes)).copy(content);
    content.set(bytes, offIn);
    return this.writeVersion(ino, fl, c, version, old, content);
  }

  /** Whole-shard write of a reserved, never-used version (committed by the caller). */
  private async writeVersion(ino: number, fl: FileLayout, c: number, version: bigint, old: ChunkRef | null, content: Uint8Array): Promise<Commit> {
    assert(version > 0n, 'a whole-chunk write needs a reserved version');
    const failed = await writeWholeChunk(this.env, this.host.ref(ino, fl, c, version, content.length), content);
    return { chunkIndex: c, version, logicalLenBytes: content.length, failed, old, resolvesIntent: null };
  }
}
