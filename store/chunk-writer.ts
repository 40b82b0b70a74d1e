// The write path of a file (DESIGN §5 commit model v2): the pieces of one store.write, each a
// whole-shard write of a fresh version (spec §8.1: new chunks, whole rewrites, every EC partial
// write) or an in-place replica patch under a journaled intent (§8.2). The order:
//   1. read the old blocks an in-place patch touches (verified), and merge the new bytes in;
//   2. one transaction: a never-used version for every whole write (queued for reclaim until its
//      commit, so a crash leaves no unaccounted shards) and, for every in-place patch, an intent
//      that holds the new bytes of its whole block span; then ONE full commit (group-committed);
//   3. the shards: whole-shard writes, and patches of all replicas in parallel, each fdatasync'd;
//   4. the chunk map commit, without a flush (data first: the shards it names are durable), which
//      drops the intents and queues the replaced versions for background reclaim (store/reclaim.ts).
// Runs under the inode's lock, taken by store/file-io.ts.
import { CommitTimes, SET_TIMES_SQL, timeColumns } from './commit-times';
import { assert } from '../src/errors';
import { ChunkEnv } from './chunk-env';
import { ChunkRow } from './chunk-map';
import { ChunkRef, FileLayout } from './chunk-ref';
import { readChunk, writeWholeChunk } from './chunk-io';
import { FsError } from './fs-error';
import { nowNs } from './meta';
import { boundedAll } from './bounded';
import { CHUNKS_IN_FLIGHT_MAX } from './range-read';
import { INTENT_SPAN_BYTES_MAX, RmwFailed, blockSpan, mergedSpan, patchReplicas } from './replica-chunk';
import { PastSize } from './past-size';

type Row = Record<string, bigint | string | null>;

/** What the writer needs of store/file-io.ts: chunk refs with their placement. */
export interface ChunkRefs {
  ref(ino: number, fl: FileLayout, chunkIndex: number, version: bigint, logicalLenBytes: number): ChunkRef;
  liveRef(ino: number, fl: FileLayout, row: ChunkRow | null): ChunkRef | null;
}

/** One piece of a write: a chunk, the bytes for it, and how it is written. */
interface Plan {
  c: number;
  offIn: number;
  bytes: Uint8Array;
  old: ChunkRef | null;
  /** The reserved version of a whole write; 0n for an in-place patch. */
  version: bigint;
  /** In-place patch: the first block and the new bytes of its whole block span (journaled). */
  patch: { firstBlock: number; span: Buffer; intentId: number } | null;
}

/** A piece whose shards are durable, waiting for the chunk map commit. */
interface Commit {
  chunkIndex: number;
  /** 0n: an in-place patch, nothing to repoint. */
  version: bigint;
  logicalLenBytes: number;
  failed: number[];
  old: ChunkRef | null;
  /** The intent this piece settles (applied, or superseded by a copy-on-write). */
  resolvesIntent: number | null;
}

export class ChunkWriter {
  private readonly q;
  private readonly pastSize: PastSize;

  constructor(private readonly env: ChunkEnv, private readonly host: ChunkRefs) {
    const db = env.db;
    this.pastSize = new PastSize(db);
    this.q = {
      info: db.prepare('SELECT layout FROM inodes WHERE ino = ?'),
      grow: db.prepare(`UPDATE inodes SET size = max(size, ?), ${SET_TIMES_SQL} WHERE ino = ? RETURNING size`),
      touch: db.prepare(`UPDATE inodes SET ${SET_TIMES_SQL} WHERE ino = ?`),
      size: db.prepare('SELECT size FROM inodes WHERE ino = ?'),
    };
  }

  /** In place (§8.2) only for a replica chunk, inside its length, not a whole rewrite, and a small span. */
  private inPlace(fl: FileLayout, old: ChunkRef | null, offIn: number, endIn: number): boolean {
    if (old === null || fl.layout.kind !== 'replica' || endIn > old.logicalLenBytes) return false;
    if (offIn === 0 && endIn >= old.logicalLenBytes) return false;
    const s = blockSpan(old, offIn, endIn - offIn);
    return s.end - s.start <= INTENT_SPAN_BYTES_MAX; // larger spans are rewritten copy-on-write
  }

  /**
   * Steps 1-4 above. Pieces that failed are not committed (their reserved versions stay queued
   * for reclaim; an intent whose replicas could not all be patched stays open for recovery);
   * the first error is rethrown after the rest is committed.
   * sizeBytes: the size to commit (DESIGN §5 prefix rule: the caller's first byte still held only
   * in memory); null: the end of the pieces. The size never grows past a piece that failed.
   * times: the mtime and ctime to commit (what the mount showed while these bytes were buffered); null: now.
   */
  async writePieces(ino: number, fl: FileLayout, pieces: Array<{ c: number; offIn: number; bytes: Uint8Array }>, sizeBytes: number | null, alsoInCommit?: () => void, times: CommitTimes | null = null): Promise<void> {
    const plans: Plan[] = pieces.map((p) => ({ ...p, old: this.host.liveRef(ino, fl, this.env.map.get(ino, p.c)), version: 0n, patch: null }));
    const spans = await this.readSpans(fl, plans);
    this.reserve(ino, fl, plans, spans, times);
    await this.env.commits.flush(); // intents and reservations durable before any shard is touched
    const commits: Commit[] = [];
    const at = (p: { c: number; offIn: number }): number => p.c * fl.chunkSizeBytes + p.offIn;
    let sizeTo = sizeBytes ?? plans.reduce((end, p) => Math.max(end, at(p) + p.bytes.length), 0);
    let firstError: unknown = null;
    try {
      await boundedAll(plans, CHUNKS_IN_FLIGHT_MAX, async (p) => {
        try {
          commits.push(await this.writePiece(ino, fl, p));
        } catch (err) {
          firstError ??= err;
          sizeTo = Math.min(sizeTo, at(p)); // a prefix: never over bytes that were not stored
        }
      });
      this.commit(ino, fl, commits, sizeTo, firstError === null ? alsoInCommit : undefined, times);
    } finally {
      for (const p of plans) if (p.version > 0n) this.env.inflight.delete(ino, p.c, p.version);
    }
    if (firstError !== null) throw firstError;
  }

  /** Step 1: each in-place piece's whole block span, old blocks (verified) with the new bytes in. */
  private async readSpans(fl: FileLayout, plans: Plan[]): Promise<Map<Plan, { firstBlock: number; span: Buffer }>> {
    const out = new Map<Plan, { firstBlock: number; span: Buffer }>();
    const rmw = plans.filter((p) => this.inPlace(fl, p.old, p.offIn, p.offIn + p.bytes.length));
    await boundedAll(rmw, CHUNKS_IN_FLIGHT_MAX, async (p) => {
      out.set(p, await mergedSpan(this.env, p.old!, p.offIn, p.bytes));
    });
    return out;
  }

  /** Step 2: versions (queued for reclaim until committed) and journaled intents, one transaction. */
  private reserve(ino: number, fl: FileLayout, plans: Plan[], spans: Map<Plan, { firstBlock: number; span: Buffer }>, times: CommitTimes | null): void {
    this.env.db.transaction(() => {
      for (const p of plans) {
        const s = spans.get(p);
        if (s === undefined) {
          p.version = this.reserveVersion(ino, fl, p.c);
          continue;
        }
        const lastBlock = s.firstBlock + Math.ceil(s.span.length / fl.bitrotBlockBytes) - 1;
        const intentId = this.env.map.addIntent(ino, p.c, p.old!.version, s.firstBlock, lastBlock, s.span);
        p.patch = { ...s, intentId };
      }
      if (spans.size > 0) {
        // Committed with the intents: a patch applied by recovery carries its mtime.
        this.q.touch.run(...timeColumns(times), ino);
      }
    })();
  }

  /** A never-used version, queued for reclaim until the commit that makes it live (call in a transaction). */
  private reserveVersion(ino: number, fl: FileLayout, c: number): bigint {
    const version = this.env.map.allocVersion(ino, c);
    this.env.reclaim.add(ino, c, version, fl);
    this.env.inflight.add(ino, c, version);
    return version;
  }

  /**
   * Step 4, without a flush. Data first: every version named here has all its shards written,
   * fdatasync'd and renamed into durable directories (writeWholeChunk resolved), and its
   * reservation was durable before that (step 2). The size grows to at most sizeTo; chunk bytes
   * left past it are noted for recovery (store/past-size.ts, DESIGN §5 prefix rule).
   */
  private commit(ino: number, fl: FileLayout, commits: Commit[], sizeTo: number, alsoInCommit: (() => void) | undefined, times: CommitTimes | null): void {
    if (commits.length === 0) return;
    const onlyPatches = alsoInCommit === undefined && commits.every((c) => c.version === 0n) && sizeTo <= this.sizeOf(ino);
    const apply = (): void => {
      for (const c of commits) {
        if (c.resolvesIntent !== null) this.env.map.removeIntent(c.resolvesIntent);
        if (c.version === 0n) continue; // an in-place patch: nothing to repoint
        this.env.map.setLive(ino, c.chunkIndex, c.version, c.logicalLenBytes);
        this.env.reclaim.remove(ino, c.chunkIndex, c.version);
        if (c.old !== null) this.env.reclaim.add(ino, c.chunkIndex, c.old.version, fl);
        for (const i of c.failed) this.env.map.queueHeal(ino, c.chunkIndex, c.version, i, 'write failed on this shard');
      }
    };
    if (onlyPatches) {
      // Applied intents only (mtime committed with them): losing this commit is harmless, recovery
      // replays the same bytes (DESIGN §5), so a following fsync needs no flush for it.
      this.env.commits.harmless(apply);
      return;
    }
    this.env.db.transaction(() => {
      // The layout may change only while a file holds no data (store/xattrs.ts); a
      // change that raced this first write would leave shards under the old layout.
      const now = this.q.info.get(ino) as Row | undefined;
      if (now === undefined || String(now.layout) !== fl.layout.text) throw new FsError('EBUSY', `inode ${ino} changed layout during a write`);
      apply();
      alsoInCommit?.(); // e.g. a small file's slice dropped with the chunks that now hold its bytes
      const { size } = this.q.grow.get(sizeTo, ...timeColumns(times), ino) as { size: bigint };
      this.pastSize.note(ino, fl.chunkSizeBytes, Number(size));
    })();
  }

  private sizeOf(ino: number): number {
    const r = this.q.size.get(ino) as Row | undefined;
    return r === undefined ? 0 : Number(r.size);
  }

  private async writePiece(ino: number, fl: FileLayout, p: Plan): Promise<Commit> {
    const { c, offIn, bytes, old } = p;
    const endIn = offIn + bytes.length;
    if (p.patch !== null) return this.patch(ino, fl, p);
    if (old === null) {
      if (offIn === 0) return this.writeVersion(ino, fl, c, p.version, null, bytes); // no copy: the common sequential write
      const content = Buffer.alloc(endIn); // the hole before offIn reads as zeros
      content.set(bytes, offIn);
      return this.writeVersion(ino, fl, c, p.version, null, content);
    }
    if (offIn === 0 && endIn >= old.logicalLenBytes) return this.writeVersion(ino, fl, c, p.version, old, bytes);
    return this.cow(ino, fl, c, p.version, old, offIn, bytes);
  }

  /** Step 3 of an in-place piece: all replicas at once; if one cannot be patched, copy-on-write instead. */
  private async patch(ino: number, fl: FileLayout, p: Plan): Promise<Commit> {
    const { firstBlock, span, intentId } = p.patch!;
    const old = p.old!;
    try {
      await patchReplicas(this.env, old, firstBlock, span);
      return { chunkIndex: p.c, version: 0n, logicalLenBytes: old.logicalLenBytes, failed: [], old: null, resolvesIntent: intentId };
    } catch (err) {
      if (!(err instanceof RmwFailed)) throw err;
      // Replicas now differ (some new, some old or torn): a fresh version supersedes them all. The
      // intent stays until that version commits, so a crash meanwhile is still replayed.
      const version = this.reserveAlone(ino, fl, p.c);
      p.version = version; // released from the in-flight set with the others
      await this.env.commits.flush(); // the reservation is durable before its shards exist
      const commit = await this.cow(ino, fl, p.c, version, old, p.offIn, p.bytes);
      return { ...commit, resolvesIntent: intentId };
    }
  }

  /** reserveVersion in its own transaction (the copy-on-write fallback of a failed patch). */
  private reserveAlone(ino: number, fl: FileLayout, c: number): bigint {
    return this.env.db.transaction(() => this.reserveVersion(ino, fl, c))();
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
