// The intents the log holds and the shards do not yet (DESIGN §5 "the intent log is the point of
// durability"): an fsync'd partial write is acknowledged once its intent row is durable, and the
// applier (store/chunks/applier.ts) patches the replicas or rewrites the EC chunk later. Until then every
// read of the chunk overlays these bytes (one view), so the backlog keeps each intent's span in
// memory, in log order per chunk. Bounded in bytes and in intents: a writer waits for room.
import { crc32c } from '../../src/crc32c';
import { assert } from '../../src/errors';

/**
 * At most this many span bytes wait to be applied. 32 MiB is 2,048 one-block (16 KiB) intents: a
 * remount at the bound replays them in well under DESIGN's 3 s (scripts/bench-intents.sh measures it).
 */
export const BACKLOG_BYTES_MAX = 32 << 20;
/** At most this many intents wait (each costs a row and a patch run). */
export const BACKLOG_INTENTS_MAX = 4096;
/** Writers waiting for room at once (each holds its data in memory). */
const WAITERS_MAX = 100_000;

/** Backlog ids of intent log records are their negated sequence numbers (row ids are positive). */
export function logRecordId(seq: bigint): number {
  return -Number(seq);
}

export interface PendingIntent {
  /** A row of the intents table (> 0), or a record of the intent log file (logRecordId, < 0). */
  id: number;
  ino: number;
  chunkIndex: number;
  /** The chunk version the span applies to (the live one when the intent was logged). */
  version: bigint;
  firstBlock: number;
  /**
   * Chunk offset of the span: firstBlock × bitrot block size (whole blocks: an intents row), or
   * exactly where the bytes were written (an intent log record: span holds exactly those bytes).
   */
  offsetBytes: number;
  span: Buffer;
  /** Replica chunk: patched in place, readers go on meanwhile; else (EC) a new version is written. */
  inPlace: boolean;
  /** When it entered the backlog (Date.now()): the applier lets intents gather a while (store/chunks/applier.ts). */
  loggedMs: number;
  /** crc32c of span when logged, checked again right before it is applied (pair assertion). */
  spanCrc: number;
  /**
   * Logged without a full commit (a small-file append no fsync asked for): the row
   * may still be lost in a power cut, so the applier makes the log durable before it touches a shard
   * in place (a torn in-place patch is repaired only by replaying a durable intent, spec §8.2).
   */
  unflushed: boolean;
}

export class IntentBacklog {
  /** ino -> chunk index -> intents in log order. Insertion order of chunks = oldest first. */
  private readonly byIno = new Map<number, Map<number, PendingIntent[]>>();
  private readonly chunkOrder = new Map<string, { ino: number; chunkIndex: number }>();
  private waiters: Array<{ resolve: () => void; reject: (err: Error) => void }> = [];
  private bytes = 0;
  private count = 0;
  /** Keys of the chunks whose list began with an intent patched in place. */
  private readonly patched = new Set<string>();
  /** Told of the intent log records that leave (applied or superseded): their log space may go. */
  onLogRecordsGone: (seqs: bigint[]) => void = () => undefined;
  /** Called when an intent is added (the applier starts). */
  onAdd: () => void = () => undefined;
  appliedIntents = 0;
  appliedBytes = 0;
  /** Applies (a chunk's patch or rewrite) that wrote intents: appliedIntents / appliedChunks is how well they gathered. */
  appliedChunks = 0;

  get lengthIntents(): number {
    return this.count;
  }
  get lengthBytes(): number {
    return this.bytes;
  }

  /** Told when an intent enters: read grants of its chunk end (fs/fuse/read-grants.ts). */
  onChange: () => void = () => undefined;

  /** offsetBytes: where the span starts in the chunk (an intent log record's: the bytes written); default its first block's start. */
  add(
    i: Omit<PendingIntent, 'spanCrc' | 'offsetBytes' | 'loggedMs' | 'unflushed'> & {
      unflushed?: boolean;
      offsetBytes?: number;
    },
    bitrotBlockBytes: number,
  ): void {
    this.onChange();
    const offsetBytes = i.offsetBytes ?? i.firstBlock * bitrotBlockBytes;
    const intent: PendingIntent = {
      ...i,
      offsetBytes,
      spanCrc: crc32c(i.span),
      loggedMs: Date.now(),
      unflushed: i.unflushed ?? false,
    };
    let chunks = this.byIno.get(i.ino);
    if (chunks === undefined) this.byIno.set(i.ino, (chunks = new Map()));
    let list = chunks.get(i.chunkIndex);
    if (list === undefined) {
      chunks.set(i.chunkIndex, (list = []));
      this.chunkOrder.set(`${i.ino}/${i.chunkIndex}`, { ino: i.ino, chunkIndex: i.chunkIndex });
      if (i.inPlace) this.patched.add(`${i.ino}/${i.chunkIndex}`);
    }
    // Each add (and rebase) keeps the list at one version, so its first intent stands for all: a
    // scan of the whole list cost every fsync'd write O(intents of its chunk), hundreds under random writes.
    assert(
      list.length === 0 || list[0].version === i.version,
      'every pending intent of a chunk names the same version',
    );
    list.push(intent);
    this.bytes += i.span.length;
    this.count++;
    this.onAdd();
  }

  /** The chunk's pending intents in log order (empty when none); a copy: the backlog changes under a reader. */
  of(ino: number, chunkIndex: number): readonly PendingIntent[] {
    return this.byIno.get(ino)?.get(chunkIndex)?.slice() ?? [];
  }

  /**
   * The chunk's pending intents that overlap chunk range [offsetBytes, +lengthBytes), in log order:
   * a reader's snapshot (a new array). One pass over numbers: under fsync'd random writes a chunk
   * holds hundreds of intents, and copying them all for every read of it, then scanning the copy
   * twice, cost 27 us of each fsync'd 4 KiB write (CPU profile).
   */
  overlapping(ino: number, chunkIndex: number, offsetBytes: number, lengthBytes: number): PendingIntent[] {
    const list = this.byIno.get(ino)?.get(chunkIndex);
    const out: PendingIntent[] = [];
    if (list === undefined) return out;
    const end = offsetBytes + lengthBytes;
    for (const i of list) {
      if (i.offsetBytes < end && i.offsetBytes + i.span.length > offsetBytes) out.push(i);
    }
    return out;
  }

  /** Whether the chunk's intents are patched in place (replica), from its oldest intent. */
  inPlace(ino: number, chunkIndex: number): boolean {
    return this.byIno.get(ino)?.get(chunkIndex)?.[0]?.inPlace ?? false;
  }

  /** Whether the chunk has pending intents (the common read asks only this). */
  has(ino: number, chunkIndex: number): boolean {
    return this.byIno.get(ino)?.has(chunkIndex) ?? false;
  }

  /**
   * The chunks with pending intents, the longest waiting first, with when each one's first intent
   * came: one pass (the applier looks at every logged intent; a scan restarted per chunk cost it
   * quadratic time in the chunks waiting).
   */
  *oldestFirst(): Generator<{ ino: number; chunkIndex: number; key: string; loggedMs: number }> {
    for (const [key, c] of this.chunkOrder) {
      yield {
        ino: c.ino,
        chunkIndex: c.chunkIndex,
        key,
        loggedMs: this.byIno.get(c.ino)!.get(c.chunkIndex)![0].loggedMs,
      };
    }
  }

  /** Under half of either bound: the applier may let intents gather. */
  get belowHalf(): boolean {
    return this.belowMark(0.5, 0, 0);
  }

  /**
   * Under fraction of both bounds once the intents being applied now (applyingBytes, applyingIntents)
   * are gone: the applier lets chunks that are rewritten whole gather up to a higher mark than patches.
   */
  belowMark(fraction: number, applyingBytes: number, applyingIntents: number): boolean {
    return (
      this.bytes - applyingBytes < BACKLOG_BYTES_MAX * fraction &&
      this.count - applyingIntents < BACKLOG_INTENTS_MAX * fraction
    );
  }

  /** Chunks whose pending intents are patched in place (replica) now. */
  get inPlaceChunks(): number {
    return this.patched.size;
  }

  /**
   * Forget these intents of a chunk (applied, or superseded by a new version); wakes writers.
   * keepRecords: their log records stay (released by the caller once a commit allows).
   */
  remove(ino: number, chunkIndex: number, ids: ReadonlySet<number>, applied: boolean, keepRecords = false): void {
    const chunks = this.byIno.get(ino);
    const list = chunks?.get(chunkIndex);
    if (chunks === undefined || list === undefined) return;
    const kept = list.filter((i) => !ids.has(i.id));
    if (applied && kept.length < list.length) this.appliedChunks++;
    const gone: bigint[] = [];
    for (const i of list) {
      if (!ids.has(i.id)) continue;
      if (i.id < 0) gone.push(BigInt(-i.id));
      this.bytes -= i.span.length;
      this.count--;
      if (applied) {
        this.appliedIntents++;
        this.appliedBytes += i.span.length;
      }
    }
    if (kept.length > 0) chunks.set(chunkIndex, kept);
    else {
      this.patched.delete(`${ino}/${chunkIndex}`);
      chunks.delete(chunkIndex);
      this.chunkOrder.delete(`${ino}/${chunkIndex}`);
      if (chunks.size === 0) this.byIno.delete(ino);
    }
    if (gone.length > 0 && !keepRecords) this.onLogRecordsGone(gone);
    this.wake();
  }

  /**
   * The chunk's pending intents now go over version (new objects: readers' snapshots keep the old
   * ones). relogged: intent log records logged again over version (old id -> new id); the old
   * records leave the log (keepRecords: the caller releases them once a commit allows).
   */
  rebase(
    ino: number,
    chunkIndex: number,
    version: bigint,
    relogged: ReadonlyMap<number, number> = new Map(),
    keepRecords = false,
  ): void {
    const chunks = this.byIno.get(ino);
    const list = chunks?.get(chunkIndex);
    if (chunks !== undefined && list !== undefined)
      chunks.set(
        chunkIndex,
        list.map((i) => ({ ...i, version, id: relogged.get(i.id) ?? i.id })),
      );
    if (relogged.size > 0 && !keepRecords) this.onLogRecordsGone([...relogged.keys()].map((id) => BigInt(-id)));
  }

  /** Every pending intent of a chunk goes (its version was replaced or dropped). */
  dropChunk(ino: number, chunkIndex: number): void {
    const list = this.byIno.get(ino)?.get(chunkIndex);
    if (list !== undefined) this.remove(ino, chunkIndex, new Set(list.map((i) => i.id)), false);
  }

  /** Every pending intent of a file goes (deleted). */
  dropInode(ino: number): void {
    for (const c of [...(this.byIno.get(ino)?.keys() ?? [])]) this.dropChunk(ino, c);
  }

  hasRoom(): boolean {
    return this.bytes < BACKLOG_BYTES_MAX && this.count < BACKLOG_INTENTS_MAX;
  }

  /** Resolves when the backlog is under its bounds (a writer waits here, never under an inode lock). */
  room(): Promise<void> {
    if (this.hasRoom()) return Promise.resolve();
    assert(this.waiters.length < WAITERS_MAX, 'too many writers waiting for the intent backlog');
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** The applier cannot make room (a full or failing disk): every waiting writer gets err, not an endless wait. */
  failWaiters(err: Error): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) w.reject(err);
  }

  private wake(): void {
    if (!this.hasRoom() || this.waiters.length === 0) return;
    const ready = this.waiters;
    this.waiters = [];
    for (const w of ready) w.resolve();
  }
}

/**
 * The one view (DESIGN §5): the spans of version in pending (a snapshot of IntentBacklog.of) over
 * chunk bytes [offsetBytes, +lengthBytes) already in target[targetOffset..], in log order (a later
 * intent wins). A reader takes one snapshot for planning its reads and for this overlay: the
 * applier may drop the intents meanwhile, and their blocks were not read from the shards.
 */
export function overlaySpans(
  pending: readonly PendingIntent[],
  version: bigint,
  offsetBytes: number,
  lengthBytes: number,
  target: Buffer,
  targetOffset: number,
): void {
  const end = offsetBytes + lengthBytes;
  for (const i of pending) {
    if (i.version !== version) continue;
    const lo = Math.max(offsetBytes, i.offsetBytes);
    const hi = Math.min(end, i.offsetBytes + i.span.length);
    if (lo < hi) i.span.copy(target, targetOffset + lo - offsetBytes, lo - i.offsetBytes, hi - i.offsetBytes);
  }
}

/**
 * The parts of chunk range [offsetBytes, +lengthBytes) that no span of version in pending covers,
 * in order: only those are read from the shards (a span's blocks may be being patched right now).
 */
export function uncoveredParts(
  pending: readonly PendingIntent[],
  version: bigint,
  offsetBytes: number,
  lengthBytes: number,
): Array<[number, number]> {
  const end = offsetBytes + lengthBytes;
  // Only the spans that overlap the range are sorted: a chunk under fsync'd random writes holds
  // hundreds of pending intents, and sorting them all cost each read of it 28 us.
  const spans: Array<[number, number]> = [];
  for (const i of pending) {
    const lo = i.offsetBytes;
    const hi = lo + i.span.length;
    if (i.version === version && hi > offsetBytes && lo < end) spans.push([lo, hi]);
  }
  if (spans.length > 1) spans.sort((a, b) => a[0] - b[0]);
  const out: Array<[number, number]> = [];
  let at = offsetBytes;
  for (const [lo, hi] of spans) {
    if (hi <= at) continue;
    if (lo >= end) break;
    if (lo > at) out.push([at, lo]);
    at = Math.max(at, hi);
  }
  if (at < end) out.push([at, end]);
  return out;
}
