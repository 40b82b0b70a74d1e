// The write path of a file (DESIGN §5): the pieces of one store.write, each a whole-shard write
// of a fresh version (spec §8.1: new chunks, whole rewrites, partial writes that extend a chunk or
// span more than INTENT_SPAN_BYTES_MAX) or a journaled intent (a partial write inside a replica,
// EC or transformed chunk). The order:
//   1. for every intent row (no intent log file: PostgreSQL stores; container appends), the whole
//      block span it touches as the file shows it, new bytes merged in; a record of the intent log
//      file holds exactly the bytes written and reads nothing;
//   2. one transaction: a never-used version for every whole write (queued for reclaim until its
//      commit, so a crash leaves no unaccounted shards) and an intent row per partial write, holding
//      its span (or its log record, appended with the commit); then ONE full commit (group-committed),
//      or none when the log records cover it. An intent is now durable: the write is
//      done for it, and the applier (store/chunks/applier.ts) patches the shards later (the log is the
//      point of durability, like ZFS's intent log);
//   3. the shards of the whole writes;
//   4. the chunk map commit, without a flush (data first: the shards it names are durable); it drops
//      the pending intents of every chunk it replaces (the new version holds their bytes) and
//      queues the replaced versions for background reclaim (store/upkeep/reclaim.ts).
// On a live mount a write of whole chunks only joins the open transaction group instead
// (store/chunks/tx-group.ts, DESIGN §5): step 3 without a flush, step 4 at the group's close.
// Runs under the inode's lock, taken by store/file-io.ts.
import type { CommitTimes } from '../meta/commit-times';
import { assert } from '../../src/errors';
import { ChunkEnv } from './chunk-env';
import { ChunkRow, StoredForm } from '../meta/chunk-map';
import { ChunkRef, FileLayout, patchedInPlace } from './chunk-ref';
import { readChunkInto, writeWholeChunk } from './chunk-io';
import { FsError } from '../fs-error';
import { boundedAll } from './bounded';
import { CHUNKS_IN_FLIGHT_MAX } from './range-read';
import { INTENT_SPAN_BYTES_MAX, blockSpan, mergedSpan } from './intent-span';
import { PastSize } from '../meta/past-size';
import { WholeWrite, repoint } from './live-version';
import { WriteSyncs } from './tx-group';
import { logRecordId } from './intent-backlog';
import { nowNs } from '../meta/meta';
import { timesFit } from '../../src/intent-record';
import { Payload, joinPayload, payloadLength } from './shard-encode';

/** What the writer needs of store/file-io.ts: chunk refs with their placement. */
export interface ChunkRefs {
  /** stored: the chunk's stored form (chunk map); a version about to be written has none yet. */
  ref(
    ino: number,
    fl: FileLayout,
    chunkIndex: number,
    version: bigint,
    logicalLenBytes: number,
    stored?: StoredForm | null,
  ): ChunkRef;
  liveRef(ino: number, fl: FileLayout, row: ChunkRow | null): ChunkRef | null;
}

/** One piece of a write: a chunk, the bytes for it, and how it is written. */
interface Plan {
  c: number;
  offIn: number;
  /** The new bytes: one buffer, or the write-back's slices laid back to back (DESIGN §5 "Write-back pieces"). */
  bytes: Payload;
  old: ChunkRef | null;
  /** The reserved version of a whole write; 0n for a journaled intent. */
  version: bigint;
  /** Journaled intent: the first block and the new bytes of its whole block span. */
  /** intentId: read once the reservation's transaction is sent (ChunkMap.addIntent). */
  /** logged: a record of the intent log file (DESIGN §5 "The log is a file of its own"), else an intents row. */
  patch: { firstBlock: number; span: Buffer; offsetBytes?: number; intentId: () => number; logged: boolean } | null;
}

/** A journaled piece's bytes: its whole block span, or (offsetBytes set) exactly the bytes written. */
interface Span {
  firstBlock: number;
  span: Buffer;
  offsetBytes?: number;
}

type Commit = WholeWrite;

export class ChunkWriter {
  private readonly pastSize: PastSize;

  constructor(
    private readonly env: ChunkEnv,
    private readonly host: ChunkRefs,
  ) {
    this.pastSize = new PastSize(env.db);
  }

  /** Journaled (DESIGN §5) when inside an existing chunk's length, not a whole rewrite, and a small span. */
  private journaled(old: ChunkRef | null, offIn: number, endIn: number): boolean {
    if (old === null || endIn > old.logicalLenBytes) return false;
    if (offIn === 0 && endIn >= old.logicalLenBytes) return false;
    const s = blockSpan(old, offIn, endIn - offIn);
    return s.end - s.start <= INTENT_SPAN_BYTES_MAX; // larger spans are rewritten copy-on-write
  }

  /**
   * Steps 1-4 above. Resolves when every piece is durable: intents in the log, whole writes in
   * their shards; with durable false, intents only at the next full commit (fsync's store.sync). Pieces that failed are not committed (their reserved versions stay queued for
   * reclaim); the first error is rethrown after the rest is committed.
   * sizeBytes: the size to commit (DESIGN §5 prefix rule: the caller's first byte still held only
   * in memory); null: the end of the pieces. The size never grows past a piece that failed.
   * times: the mtime and ctime to commit (what the mount showed while these bytes were buffered); null: now.
   * withIntents: run in the transaction that logs the intents when the write is intents only and
   * durable is false (a container append's slices); resolves to whether it ran there.
   * rowsOnly: intents go to metadata rows even on a store with an intent log file (containers:
   * their appends commit atomically with the slices that point at them).
   */
  async writePieces(
    ino: number,
    fl: FileLayout,
    pieces: Array<{ c: number; offIn: number; bytes: Payload }>,
    sizeBytes: number | null,
    alsoInCommit?: () => void,
    times: CommitTimes | null = null,
    durable = true,
    withIntents?: () => void,
    rowsOnly = false,
  ): Promise<boolean> {
    assert(new Set(pieces.map((p) => p.c)).size === pieces.length, 'one piece per chunk in a write');
    // A chunk's intents rewrite waiting in the open group commits before any other change of that
    // chunk (its records leave the log with that commit): the group closes first.
    if (pieces.some((p) => this.env.groups.holdsRewrite(ino, p.c))) await this.env.groups.close();
    const plans: Plan[] = pieces.map((p) => ({
      ...p,
      old: this.host.liveRef(ino, fl, this.env.map.get(ino, p.c)),
      version: 0n,
      patch: null,
    }));
    // Partial writes (replica, EC, transformed) of an fsync'd or stored write go to the log file:
    // exactly the bytes written, sealed for encrypting layouts (DESIGN §5, §10 "Log records").
    const viaLog = this.env.intentLog !== null && durable && withIntents === undefined && !rowsOnly;
    const spans = await this.readSpans(plans, viaLog);
    const groups = this.env.groups;
    // Whole writes of the mount's write-back join the open transaction group (DESIGN §5). Any other
    // commit of this file waits for the group's: it must not pass the rows the group holds.
    const plain = durable && alsoInCommit === undefined && withIntents === undefined;
    const grouped = groups.running && plain && spans.size === 0 && plans.every((p) => !this.env.backlog.has(ino, p.c));
    if (!grouped && groups.holds(ino)) {
      await groups.close();
      // A close may leave a row out (below its quorum, a rewrite it dropped): then plan again against
      // what is live now, so no record names a version that never went live (replay would drop it).
      const live = (p: Plan): bigint | undefined => this.host.liveRef(ino, fl, this.env.map.get(ino, p.c))?.version;
      if (plans.some((p) => live(p) !== p.old?.version))
        return this.writePieces(ino, fl, pieces, sizeBytes, alsoInCommit, times, durable, withIntents, rowsOnly);
    }
    if (grouped) return this.writeGrouped(ino, fl, plans, sizeBytes, times);
    // Intents only, none waited for: withIntents commits with them (store/small/needle-io.ts).
    const joined = withIntents !== undefined && !durable && plans.every((p) => spans.has(p)) ? withIntents : undefined;
    const stampTimes = times ?? { mtimeNs: nowNs(), ctimeNs: nowNs() };
    const covered = this.reserve(ino, fl, plans, spans, stampTimes, joined, viaLog);
    const commits: Commit[] = [];
    const at = (p: { c: number; offIn: number }): number => p.c * fl.chunkSizeBytes + p.offIn;
    let sizeTo = sizeBytes ?? plans.reduce((end, p) => Math.max(end, at(p) + payloadLength(p.bytes)), 0);
    let firstError: unknown = null;
    try {
      // Intents and reservations durable before any shard is touched. A write made of intents only
      // that no fsync waits for (a container append) skips it: its rows and the commit that follows
      // them are durable together at the next full commit (the WAL keeps a prefix of the commits),
      // and the applier flushes before it patches a shard under such an intent.
      // Logged records need no metadata flush when their commit stamped only times the records hold.
      const versions = plans.some((p) => p.patch === null);
      const flushed = versions || (durable && !covered);
      const toLog = plans.filter((p) => p.patch?.logged === true);
      const appended = new Set<Plan>();
      const recordTimes = timesFit(stampTimes.mtimeNs, stampTimes.ctimeNs) ? stampTimes : null;
      const settled = await Promise.allSettled([
        flushed ? this.env.commits.flush() : null,
        ...toLog.map(async (p) => {
          const seq = await this.env.intentLog!.append({
            ino,
            chunkIndex: p.c,
            version: p.old!.version,
            offsetBytes: p.offIn,
            bytes: joinPayload(p.bytes),
            times: recordTimes,
            sealed: fl.layout.transforms.encryption !== null,
          });
          p.patch!.intentId = () => logRecordId(seq);
          appended.add(p);
        }),
      ]);
      const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed !== undefined) {
        // Records that are durable are the file's now (replay would apply them): the backlog takes
        // them, so reads show what a reopen would, and the applier folds and releases them (else
        // they pinned the log's tail for good and the log filled). The rest of the write fails.
        this.handOver(ino, fl, [...appended], true);
        throw failed.reason;
      }
      this.handOver(ino, fl, plans, !flushed);
      await boundedAll(
        plans.filter((p) => p.patch === null),
        CHUNKS_IN_FLIGHT_MAX,
        async (p) => {
          try {
            commits.push(await this.writePiece(ino, fl, p));
          } catch (err) {
            firstError ??= err;
            sizeTo = Math.min(sizeTo, at(p)); // a prefix: never over bytes that were not stored
          }
        },
      );
      const logged = plans.some((p) => p.patch !== null);
      this.commit(ino, fl, commits, logged, sizeTo, firstError === null ? alsoInCommit : undefined, times);
    } finally {
      for (const p of plans) if (p.version > 0n) this.env.inflight.delete(ino, p.c, p.version);
    }
    if (firstError !== null) throw firstError;
    return joined !== undefined;
  }

  /**
   * A write of whole chunks in the open transaction group (DESIGN §5): versions reserved durably
   * (a crash leaves no unaccounted shards), shards written through the page cache with no flush,
   * the times stamped now; the rows and the size wait for the group's commit, after its flush. Reads
   * see the rows at once (ChunkMap.pending). At the group's dirty-byte bound the writer waits.
   */
  private async writeGrouped(
    ino: number,
    fl: FileLayout,
    plans: Plan[],
    sizeBytes: number | null,
    times: CommitTimes | null,
  ): Promise<boolean> {
    this.reserve(ino, fl, plans, new Map(), times ?? { mtimeNs: nowNs(), ctimeNs: nowNs() }, undefined, false);
    const at = (p: { c: number; offIn: number }): number => p.c * fl.chunkSizeBytes + p.offIn;
    let sizeTo = sizeBytes ?? plans.reduce((end, p) => Math.max(end, at(p) + payloadLength(p.bytes)), 0);
    let firstError: unknown = null;
    const done: Array<{ p: Plan; w: Commit; syncs: WriteSyncs }> = [];
    try {
      // The versions' chunk directories are made while the reservation is flushed: directories only,
      // no shard file before it is durable (DESIGN §5).
      const dirs = plans.map((p) => this.env.shards.prepareDirs(this.host.ref(ino, fl, p.c, p.version, 0)));
      await Promise.all([this.env.commits.flush(), ...dirs]);
      await boundedAll(plans, CHUNKS_IN_FLIGHT_MAX, async (p) => {
        const syncs = new WriteSyncs();
        try {
          done.push({ p, w: await this.writePiece(ino, fl, p, syncs), syncs });
        } catch (err) {
          firstError ??= err;
          sizeTo = Math.min(sizeTo, at(p)); // a prefix: never over bytes that were not stored
        }
      });
    } catch (err) {
      for (const p of plans) this.env.inflight.delete(ino, p.c, p.version);
      throw err;
    }
    // Versions not stored are released now; the group releases the others after its commit.
    for (const p of plans) if (!done.some((d) => d.p === p)) this.env.inflight.delete(ino, p.c, p.version);
    this.env.db.transaction(() => this.env.fileRows.stamp(ino, times))();
    for (const { p, w, syncs } of done) {
      const ref = this.host.ref(ino, fl, p.c, w.version, w.logicalLenBytes, w.stored);
      this.env.groups.add(ino, ref, w, syncs, sizeTo, w.logicalLenBytes * ref.diskIds.length);
    }
    if (firstError !== null) throw firstError;
    await this.env.groups.throttle();
    return false;
  }

  /** Step 2 done: the durable intents go to the backlog, where reads see them and the applier takes them. */
  private handOver(ino: number, fl: FileLayout, plans: Plan[], unflushed: boolean): void {
    for (const p of plans) {
      if (p.patch === null) continue;
      const { firstBlock, span, intentId, logged, offsetBytes } = p.patch;
      const inPlace = patchedInPlace(p.old!);
      const i = {
        id: intentId(),
        ino,
        chunkIndex: p.c,
        version: p.old!.version,
        firstBlock,
        span,
        inPlace,
        unflushed: unflushed && !logged,
      };
      this.env.backlog.add(offsetBytes === undefined ? i : { ...i, offsetBytes }, fl.bitrotBlockBytes);
    }
  }

  /** Step 1: each journaled piece's whole block span, as the file shows it, with the new bytes in. */
  /**
   * viaLog: a partial write that goes to the intent log file holds exactly the bytes written (read
   * nothing: the applier reads the blocks, or the stored chunk, when it folds them in, DESIGN §5);
   * offsetBytes is theirs.
   */
  private async readSpans(plans: Plan[], viaLog: boolean): Promise<Map<Plan, Span>> {
    const out = new Map<Plan, Span>();
    const journaled = plans.filter((p) => this.journaled(p.old, p.offIn, p.offIn + payloadLength(p.bytes)));
    for (const p of journaled) {
      if (!viaLog) continue;
      const first = Math.floor(p.offIn / p.old!.fl.bitrotBlockBytes);
      out.set(p, { firstBlock: first, span: Buffer.from(joinPayload(p.bytes)), offsetBytes: p.offIn });
    }
    const rmw = journaled.filter((p) => !out.has(p));
    // A lone span (an fsync'd small write) is read on this thread when the Io allows it: no pool
    // round trip on the fsync's path (measured: readSpans 220 us -> see docs/benchmarks.md).
    const inline = rmw.length === 1;
    await boundedAll(rmw, CHUNKS_IN_FLIGHT_MAX, async (p) => {
      out.set(p, await mergedSpan(this.env, p.old!, p.offIn, joinPayload(p.bytes), inline));
    });
    return out;
  }

  /**
   * Step 2: versions (queued for reclaim until committed) and journaled intents, one transaction.
   * viaLog: partial writes become intent log records (appended by the caller), not rows. Returns
   * whether the commit is covered by the log: it holds only the times stamped for logged writes,
   * which their records hold too (replay stamps them again), so it needs no flush of its own.
   */
  private reserve(
    ino: number,
    fl: FileLayout,
    plans: Plan[],
    spans: Map<Plan, Span>,
    times: CommitTimes,
    withIntents: (() => void) | undefined,
    viaLog: boolean,
  ): boolean {
    const tx = (): void => {
      for (const p of plans) {
        const s = spans.get(p);
        if (s === undefined) {
          p.version = this.reserveVersion(ino, fl, p.c);
          continue;
        }
        if (viaLog) {
          p.patch = { ...s, intentId: () => 0, logged: true }; // its id once the record is durable
          continue;
        }
        const lastBlock = s.firstBlock + Math.ceil(s.span.length / fl.bitrotBlockBytes) - 1;
        const sealed = fl.layout.transforms.encryption !== null; // DESIGN §10 log records
        const intentId = this.env.map.addIntent(ino, p.c, p.old!.version, s.firstBlock, lastBlock, s.span, sealed);
        p.patch = { ...s, intentId, logged: false };
      }
      if (spans.size > 0) {
        // Committed with the intents: the write they log is durable with its mtime.
        this.env.fileRows.stamp(ino, times);
      }
      withIntents?.();
    };
    const covered =
      viaLog && withIntents === undefined && timesFit(times.mtimeNs, times.ctimeNs) && plans.every((p) => spans.has(p));
    if (covered) this.env.commits.harmless(tx);
    else this.env.db.transaction(tx)();
    return covered;
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
   * left past it are noted for recovery (store/meta/past-size.ts, DESIGN §5 prefix rule). A write made
   * of intents only commits nothing more unless the size grows or the caller adds to the commit.
   */
  private commit(
    ino: number,
    fl: FileLayout,
    commits: Commit[],
    logged: boolean,
    sizeTo: number,
    alsoInCommit: (() => void) | undefined,
    times: CommitTimes | null,
  ): void {
    if (commits.length === 0 && (!logged || (alsoInCommit === undefined && sizeTo <= this.sizeOf(ino)))) return;
    this.env.db.transaction(() => {
      // The layout may change only while a file holds no data (store/meta/ops-base.ts); a
      // change that raced this first write would leave shards under the old layout.
      if (this.env.fileRows.layoutText(ino) !== fl.layout.text)
        throw new FsError('EBUSY', `inode ${ino} changed layout during a write`);
      for (const c of commits) repoint(this.env, ino, fl, c);
      alsoInCommit?.(); // e.g. a small file's slice dropped with the chunks that now hold its bytes
      const sizeBytes = this.env.fileRows.grow(ino, sizeTo, times);
      this.pastSize.note(ino, fl.chunkSizeBytes, sizeBytes);
    })();
    for (const c of commits) if (c.old !== null) this.env.backlog.dropChunk(ino, c.chunkIndex);
  }

  private sizeOf(ino: number): number {
    return this.env.fileRows.sizeBytes(ino);
  }

  private async writePiece(ino: number, fl: FileLayout, p: Plan, syncs?: WriteSyncs): Promise<Commit> {
    const { c, offIn, bytes, old } = p;
    const endIn = offIn + payloadLength(bytes);
    assert(p.patch === null, 'a journaled piece is applied by the applier');
    if (old === null) {
      if (offIn === 0) return this.writeVersion(ino, fl, c, p.version, null, bytes, syncs); // no copy: the common sequential write
      const content = Buffer.alloc(endIn); // the hole before offIn reads as zeros
      setPayload(content, bytes, offIn);
      return this.writeVersion(ino, fl, c, p.version, null, content, syncs);
    }
    if (offIn === 0 && endIn >= old.logicalLenBytes) return this.writeVersion(ino, fl, c, p.version, old, bytes, syncs);
    return this.cow(ino, fl, c, p.version, old, offIn, bytes, syncs);
  }

  /** Copy-on-write: old chunk bytes (as the file shows them, pending intents in) + the new ones, as a fresh version (DESIGN §5). */
  private async cow(
    ino: number,
    fl: FileLayout,
    c: number,
    version: bigint,
    old: ChunkRef,
    offIn: number,
    bytes: Payload,
    syncs?: WriteSyncs,
  ): Promise<Commit> {
    const endIn = offIn + payloadLength(bytes);
    // A pooled chunk buffer (huge pages, page-aligned: its shards can be written past the page
    // cache): fresh, each rewrite left 4 MiB of garbage resident until a collection (the mount's
    // peak RSS under random writes to ec:4+2, DESIGN §5 "Direct shard writes").
    const lengthBytes = Math.max(old.logicalLenBytes, endIn);
    const pooled = this.env.shards.scratch.take(lengthBytes);
    try {
      const content = pooled.subarray(0, lengthBytes);
      await readChunkInto(this.env, old, 0, old.logicalLenBytes, content, 0);
      content.fill(0, old.logicalLenBytes, offIn); // a hole between the old end and the write reads as zeros
      setPayload(content, bytes, offIn);
      return await this.writeVersion(ino, fl, c, version, old, content, syncs);
    } finally {
      this.env.shards.scratch.give(pooled);
    }
  }

  /** Whole-shard write of a reserved, never-used version (committed by the caller). */
  private async writeVersion(
    ino: number,
    fl: FileLayout,
    c: number,
    version: bigint,
    old: ChunkRef | null,
    content: Payload,
    syncs?: WriteSyncs,
  ): Promise<Commit> {
    const lengthBytes = payloadLength(content);
    assert(version > 0n, 'a whole-chunk write needs a reserved version');
    const { failed, stored } = await writeWholeChunk(
      this.env,
      this.host.ref(ino, fl, c, version, lengthBytes),
      content,
      syncs,
    );
    return { chunkIndex: c, version, logicalLenBytes: lengthBytes, failed, stored, old };
  }
}

/** payload's bytes into target at atBytes (slices back to back). */
function setPayload(target: Uint8Array, payload: Payload, atBytes: number): void {
  if (!Array.isArray(payload)) {
    target.set(payload, atBytes);
    return;
  }
  let at = atBytes;
  for (const slice of payload) {
    target.set(slice, at);
    at += slice.length;
  }
}
