// Needles in containers, the data path (spec §11.4, §11.5; DESIGN §5 "Small files"):
// - read: the needle's container range -> chunk -> the §9 verified read (failover, reconstruction,
//   heal queue), then magic, file_id, cookie and data_crc32c; a mismatch is a corruption signal
//   that fails over to the next replica like bitrot (counted, queued for heal), never wrong bytes;
// - append: batched. Needles of all the calls that arrive while an append runs go into the next
//   one: one container write through the ordinary chunk write path (reserved versions, journaled
//   intents, reclaim; store/chunks/chunk-writer.ts), durable before ONE transaction commits the append
//   offset and every slice of the batch (data first). A container chunk is written whole the first
//   time (zero-padded to the chunk size), so later appends are small §8.2 in-place patches under a
//   journaled intent instead of copy-on-write of the tail chunk. Needles never cross a container
//   chunk boundary (DESIGN §3): one that does not fit starts the next chunk, the gap is dead.
// Needles a crash wrote past the committed append offset are free space: the next append
// overwrites them, and no slice names them.
import { randomU32 } from '../random-ids';
import { NEEDLE_ALIGN_DEFAULT, encodeNeedle, needleSpanBytes, NEEDLE_HEADER_BYTES } from '../../src/needle';
import { Slice, checkNeedle } from '../../src/slice';
import { SliceError } from '../../src/errors';
import { ChunkEnv, noteServedAround, noteShardFailure, readOrder } from '../chunks/chunk-env';
import { ChunkRef, FileLayout, siteOf } from '../chunks/chunk-ref';
import { readChunk, readReplicaView } from '../chunks/chunk-io';
import { classifyShardError } from '../chunks/shard-encode';
import { Containers, ContainerRow } from '../meta/containers';
import { FsError } from '../fs-error';

/** Needles of one container append (a bound on the batch; the rest go into the next append). */
export const NEEDLES_PER_APPEND_MAX = 4096;
/** Bytes of one container append: at most one intent span (store/chunks/replica-chunk.ts) when it patches. */
export const APPEND_BYTES_MAX = 1 << 20;
/** Pending needles across pack classes before callers wait (memory bound of the queue). */
const PENDING_NEEDLES_MAX = 65_536;
/** Batches retire() waits out before it gives up for this round (appends that never pause). */
const RETIRE_WAITS_MAX = 64;

/** What needle I/O needs of store/file-io.ts (chunk refs, the container write, containers' inodes). */
export interface ContainerHost {
  layoutOf(ino: number): FileLayout;
  chunkRef(ino: number, chunkIndex: number): ChunkRef | null;
  /**
   * Pieces written through the chunk write path under the container's lock; durable on return, or
   * with durable false, patches in place (journaled intents) at the next full commit.
   */
  /** withIntents: see ChunkWriter.writePieces; resolves to whether it ran. */
  writeInternal(
    ino: number,
    pieces: Array<{ c: number; offIn: number; bytes: Uint8Array }>,
    durable?: boolean,
    withIntents?: () => void,
  ): Promise<boolean>;
  /** A new container inode (no directory entry) for packClass; in the caller's transaction. */
  createContainer(
    packClass: string,
    state: 'open' | 'sealing',
    sealedFrom: number | null,
    usedBytes: number,
    deadBytes: number,
  ): ContainerRow;
}

export interface NeedleRequest {
  ino: number;
  packClass: string;
  data: Uint8Array;
  /** Runs in the append's commit transaction with the needle's slice (set the inode's slice, size...). */
  commit(slice: Slice): void;
}

interface Pending extends NeedleRequest {
  resolve(slice: Slice): void;
  reject(err: unknown): void;
}

/** Read a small file's needle data (spec §11.4 steps 1-5). */
export async function readNeedle(env: ChunkEnv, host: ContainerHost, ino: number, slice: Slice): Promise<Buffer> {
  const cid = Number(slice.containerId);
  const fl = host.layoutOf(cid);
  const cs = BigInt(fl.chunkSizeBytes);
  const c = Number(slice.offsetBytes / cs);
  const offIn = Number(slice.offsetBytes % cs);
  const spanBytes = NEEDLE_HEADER_BYTES + slice.lengthBytes;
  const ref = host.chunkRef(cid, c);
  if (ref === null || offIn + spanBytes > ref.logicalLenBytes) {
    throw new FsError(
      'EIO',
      `inode ${ino}: slice [${slice.offsetBytes}, +${spanBytes}) lies outside container ${cid} chunk ${c}`,
      { fileId: BigInt(cid), chunkIndex: BigInt(c) },
    );
  }
  if (fl.layout.kind === 'replica' && ref.stored === null)
    return readReplicaNeedle(env, ref, ino, slice, offIn, spanBytes);
  // EC: data shards only unless one fails (§6); a transformed (sealed) container chunk is decoded whole (DESIGN §10).
  const bytes = await readChunk(env, ref, offIn, spanBytes);
  try {
    return checkNeedle(slice, BigInt(ino), bytes);
  } catch (err) {
    if (!(err instanceof SliceError)) throw err;
    env.counters.bump('needle_mismatches');
    throw new FsError(
      'EIO',
      `inode ${ino}: needle in container ${cid} chunk ${c} at ${slice.offsetBytes}: ${err.message}`,
      siteOf(ref),
    );
  }
}

/** Each replica in read order until one holds a needle that checks (a mismatch fails over like bitrot). */
async function readReplicaNeedle(
  env: ChunkEnv,
  ref: ChunkRef,
  ino: number,
  slice: Slice,
  offIn: number,
  spanBytes: number,
): Promise<Buffer> {
  const problems: string[] = [];
  for (const i of readOrder(
    env,
    ref,
    ref.diskIds.map((_, j) => j),
  )) {
    try {
      const bytes = await readReplicaView(env, ref, i, offIn, spanBytes); // one view (DESIGN §5)
      const data = checkNeedle(slice, BigInt(ino), bytes);
      if (problems.length > 0) env.counters.bump('failovers');
      if (i !== 0) noteServedAround(env);
      env.health.ok(ref.diskIds[i]);
      return data;
    } catch (err) {
      if (err instanceof SliceError) {
        problems.push(`replica ${i}: ${err.message}`);
        env.db.transaction(() => {
          const isNew = env.map.queueHeal(
            ref.ino,
            ref.chunkIndex,
            ref.version,
            i,
            `needle of inode ${ino}: ${err.message}`,
          );
          if (isNew) env.counters.bump('needle_mismatches'); // a damaged needle copy counts once
        })();
        continue;
      }
      if (classifyShardError(err) === null) throw err;
      noteShardFailure(env, ref, i, err);
      problems.push(`replica ${i}: ${(err as Error).message}`);
    }
  }
  env.counters.bump('unrecoverable_reads');
  throw new FsError(
    'EIO',
    `inode ${ino}: no replica of container ${ref.ino} chunk ${ref.chunkIndex} holds its needle (${problems.join('; ')})`,
    siteOf(ref),
  );
}

/** Where each needle of a batch goes: offsets from the append offset, skipping to the next chunk when one would cross it. */
export function placeNeedles(
  usedBytes: number,
  chunkSizeBytes: number,
  spans: number[],
): { offsets: number[]; endBytes: number; gapBytes: number } {
  const offsets: number[] = [];
  let at = usedBytes;
  let gapBytes = 0;
  for (const span of spans) {
    const inChunk = at % chunkSizeBytes;
    if (inChunk + span > chunkSizeBytes) {
      gapBytes += chunkSizeBytes - inChunk; // DESIGN §3: zero, and dead
      at += chunkSizeBytes - inChunk;
    }
    offsets.push(at);
    at += span;
  }
  return { offsets, endBytes: at, gapBytes };
}

/** A new u32 cookie (spec §11.2: random, anti-stale). */
function newCookie(): number {
  return randomU32();
}

export class NeedleAppender {
  private pending: Pending[] = [];
  private running: Promise<void> | null = null;
  /** Called after an append filled its container (state 'full'): start its seal (store/small/compactor.ts); must not throw. */
  onFull: (containerId: number) => Promise<void> = async () => undefined;

  constructor(
    private readonly env: ChunkEnv,
    private readonly host: ContainerHost,
    private readonly containers: Containers,
    private readonly capacityBytes: () => number,
  ) {}

  /** The needle's slice once it is durable and committed (group-appended with concurrent calls). */
  append(req: NeedleRequest): Promise<Slice> {
    if (this.pending.length >= PENDING_NEEDLES_MAX)
      return Promise.reject(new FsError('EBUSY', 'needle append queue full'));
    const p = new Promise<Slice>((resolve, reject) => this.pending.push({ ...req, resolve, reject }));
    this.running ??= this.drain().finally(() => {
      this.running = null;
    });
    return p;
  }

  /** Appends until the queue is empty; calls that arrive meanwhile join the next batch. */
  private async drain(): Promise<void> {
    await new Promise((r) => setImmediate(r)); // let the calls of this tick (one flush batch) join
    for (let round = 0; round < PENDING_NEEDLES_MAX && this.pending.length > 0; round++) {
      const batch = this.takeBatch();
      try {
        await this.appendBatch(batch);
      } catch (err) {
        for (const p of batch) p.reject(err);
      }
    }
  }

  /**
   * One pack class, bounded by NEEDLES_PER_APPEND_MAX and APPEND_BYTES_MAX (at least one needle). One
   * pass: the rest keep their order in the queue (a splice per taken needle made a large queue quadratic).
   */
  private takeBatch(): Pending[] {
    const cls = this.pending[0].packClass;
    const batch: Pending[] = [];
    const rest: Pending[] = [];
    let bytes = 0;
    for (const p of this.pending) {
      const span = needleSpanBytes(p.data.length);
      const fits = batch.length === 0 || (batch.length < NEEDLES_PER_APPEND_MAX && bytes + span <= APPEND_BYTES_MAX);
      if (p.packClass === cls && fits) {
        batch.push(p);
        bytes += span;
      } else {
        rest.push(p);
      }
    }
    this.pending = rest;
    return batch;
  }

  /**
   * Stop appending to open container id (state 'full'), so it can be sealed and compacted although
   * it never filled: its dead needles hold space. Only between batches: a batch
   * in flight writes at the offset it read. false when it is not open, or appends never paused.
   */
  async retire(id: number): Promise<boolean> {
    for (let tries = 0; tries < RETIRE_WAITS_MAX && this.running !== null; tries++)
      await this.running.catch(() => undefined);
    if (this.running !== null) return false; // appends kept coming: a later round tries again
    const row = this.containers.get(id);
    if (row === null || row.state !== 'open') return false;
    this.containers.setState(id, 'full'); // synchronous with the check: no batch can start in between
    return true;
  }

  private openContainer(packClass: string): ContainerRow {
    return this.env.db.transaction(
      () => this.containers.openOf(packClass) ?? this.host.createContainer(packClass, 'open', null, 0, 0),
    )();
  }

  private async appendBatch(batch: Pending[]): Promise<void> {
    const container = this.openContainer(batch[0].packClass);
    const fl = this.host.layoutOf(container.id);
    const cs = fl.chunkSizeBytes;
    const needles = batch.map((p) => encodeNeedle(BigInt(p.ino), newCookie(), p.data, NEEDLE_ALIGN_DEFAULT));
    const { offsets, endBytes, gapBytes } = placeNeedles(
      container.usedBytes,
      cs,
      needles.map((n) => n.length),
    );
    // Not flushed here: close is not fsync (DESIGN §5). The slices commit after the
    // intents that hold their needles, and the WAL keeps a prefix of the commits, so a power cut
    // leaves a file's old needle or its new one, never a slice without its bytes; fsync (store.sync)
    // makes both durable with one flush, and the applier flushes before it patches the container.
    const slices = batch.map(
      (p, i): Slice => ({
        containerId: BigInt(container.id),
        offsetBytes: BigInt(offsets[i]),
        lengthBytes: p.data.length,
        cookie: needles[i].readUInt32LE(20),
      }),
    );
    const errors = new Map<Pending, unknown>();
    const full = endBytes >= this.capacityBytes();
    // The batch's commits go in one savepoint; when one fails (deleted meanwhile, a bad value) it is
    // rolled back and each file's commit runs in a savepoint of its own, so a failure leaves no
    // half-done change and fails that file alone, not the others of the batch. A savepoint per file
    // always cost about 5% of a small file's write.
    const commitAll = this.env.db.transaction(() => batch.forEach((p, i) => p.commit(slices[i])));
    const commitOne = this.env.db.transaction((p: Pending, slice: Slice) => p.commit(slice));
    const commitEach = (): void =>
      batch.forEach((p, i) => {
        try {
          commitOne(p, slices[i]);
        } catch (err) {
          errors.set(p, err); // its needle is dead; the file keeps what it had before
          this.containers.addDead(container.id, needles[i].length);
        }
      });
    const commitSlices = (): void => {
      errors.clear();
      this.containers.setUsed(container.id, endBytes, gapBytes);
      if (full) this.containers.setState(container.id, 'full');
      try {
        commitAll();
      } catch (err) {
        if (!this.env.db.inTransaction) throw err; // the engine rolled the whole transaction back: no slice commits
        commitEach(); // the error each file's own commit throws is the one its caller gets
      }
    };
    // Where a transaction costs a round trip: when the container write is journaled intents only,
    // the slices commit in the transaction that logs them (one round trip): atomic with the needles'
    // bytes, so no slice is ever without them (data first, DESIGN §5). Otherwise after it.
    const withIntents = this.env.db.caps.transactionsCostRoundTrips ? commitSlices : undefined;
    const pieces = this.pieces(container, cs, needles, offsets, endBytes);
    if (!(await this.host.writeInternal(container.id, pieces, false, withIntents)))
      this.env.db.transaction(commitSlices)();
    batch.forEach((p, i) => (errors.has(p) ? p.reject(errors.get(p)) : p.resolve(slices[i])));
    if (full) await this.onFull(container.id);
  }

  /**
   * The container write: each touched chunk that holds no data yet is written whole (zero-padded to
   * the chunk size); a chunk that exists gets just the new bytes (an in-place journaled patch).
   */
  private pieces(
    container: ContainerRow,
    cs: number,
    needles: Buffer[],
    offsets: number[],
    endBytes: number,
  ): Array<{ c: number; offIn: number; bytes: Uint8Array }> {
    const out: Array<{ c: number; offIn: number; bytes: Uint8Array }> = [];
    const start = container.usedBytes;
    for (let c = Math.floor(start / cs); c * cs < endBytes; c++) {
      const exists = this.host.chunkRef(container.id, c) !== null;
      const lo = exists ? Math.max(start, c * cs) : c * cs;
      const hi = exists ? Math.min(endBytes, (c + 1) * cs) : (c + 1) * cs;
      const bytes = Buffer.alloc(hi - lo);
      needles.forEach((n, i) => {
        const a = Math.max(offsets[i], lo);
        const b = Math.min(offsets[i] + n.length, hi);
        if (a < b) n.copy(bytes, a - lo, a - offsets[i], b - offsets[i]);
      });
      out.push({ c, offIn: lo - c * cs, bytes });
    }
    return out;
  }
}
