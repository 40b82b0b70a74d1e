// Seal and compaction of containers (spec §11.5, DESIGN §5 "Small files").
// Seal: a full container ('full': used >= capacity, no more appends) is rewritten ONCE as a new
// write-once internal file in its target layout (EC for ec:K+M): state 'sealing' is committed
// first, the chunks are copied through the ordinary whole-shard write path, then one transaction
// repoints every slice (offsets unchanged), marks it 'sealed' and queues the old container for
// reclaim. A crash in between leaves a 'sealing' row, dropped at the next open, and the 'full'
// one is sealed again. A replica target is already in its layout: sealing only changes the state.
// A sealed container is never written again.
// Compaction: sealed containers with dead_bytes / used_bytes >= COMPACT_DEAD_RATIO (and at least
// COMPACT_DEAD_BYTES_MIN dead); an open container past both is retired first (state 'full'). Each needle is
// live iff inode(file_id).slice == {this container, this offset, cookie} (no reverse index); live
// needles are appended to the open container of the pack class and repointed in that append's
// transaction only if the slice still names the old needle; then the old container is reclaimed.
import { NEEDLE_HEADER_BYTES, NEEDLE_MAGIC, decodeNeedleHeader, needleSpanBytes } from '../../src/needle';
import { Slice } from '../../src/slice';
import { ChunkEnv } from '../chunks/chunk-env';
import { readChunk } from '../chunks/chunk-io';
import { ContainerRow, Containers } from '../meta/containers';
import type { SliceRows } from '../meta/slice-rows';
import type { ContainerHost, NeedleAppender } from './needle-io';
import { parseLayout } from '../../src/layout';
import { openLayoutOf } from './pack-class';
import { CompactionError, NeedleRewritten } from './compaction-error';
import { repliesRead } from '../meta/replies-read';
import { SettledContainers } from './settled-containers';

/** Compaction trigger (spec §11.6 Q6 tunable): dead / used bytes of a container. */
export const COMPACT_DEAD_RATIO = 0.4;
/**
 * Dead bytes below this stay where they are: moving a container's live needles to free less would
 * cost more writes than the space is worth. Also a bound on the space dead needles hold: at most
 * this much per open container, or the dead ratio of a sealed one.
 */
export const COMPACT_DEAD_BYTES_MIN = 4 << 20;
/** Containers one compaction round takes. */
const CONTAINERS_PER_ROUND_MAX = 4;
/** Chunks of a container copied by one seal write (bounded memory: this many chunks in flight). */
const SEAL_CHUNKS_PER_WRITE_MAX = 4;
/** Background rate limit: pause between rounds, and at least this long per MiB copied. */
const ROUND_PAUSE_MS = 1000;
const PAUSE_PER_MIB_MS = 20;
/** The background rounds' errors are logged at most once this often (a failing disk fails every round). */
const ERROR_LOG_INTERVAL_MS = 60_000;
/** Needles walked in one container (a bound on the scan loop: capacity / smallest needle). */
const NEEDLES_PER_CONTAINER_MAX = 1 << 26;

export interface CompactReport {
  sealed: number;
  compacted: number;
  needlesMoved: number;
  bytesCopied: number;
  /** Live needles whose append failed: they stay where they were (CompactionError). */
  needlesFailed: number;
  errors: string[];
}

export function emptyCompactReport(): CompactReport {
  return { sealed: 0, compacted: 0, needlesMoved: 0, needlesFailed: 0, bytesCopied: 0, errors: [] };
}

/** What compaction needs of the file layer (store/file-io.ts): the container rows, slices, appender, and internal files. */
export interface CompactorHost extends ContainerHost {
  readonly containers: Containers;
  readonly slices: SliceRows;
  readonly appender: NeedleAppender;
  /** An internal file's rows go, its chunks to the reclaim queue; in the caller's transaction. */
  dropInternal(ino: number): void;
  /** Cached file rows dropped (a seal or compaction repointed many slices). */
  forgetAll(): void;
}

export class Compactor {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;
  /** Containers a seal or compaction is working on: the append's seal and a round never both take one. */
  private readonly busy = new Set<number>();
  /** Seals started by appends that filled their container (awaited by stop()). */
  private readonly sealing = new Set<Promise<unknown>>();
  /** Errors of the background rounds and seals since open (status, metrics); `chunkfs compact` reports its own. */
  roundErrors = 0;
  lastError = '';
  /** The mount's log: one line per ERROR_LOG_INTERVAL_MS about the background rounds' errors. */
  log: (line: string) => void = () => undefined;
  private loggedMs = -Infinity;
  private unlogged = 0;
  /**
   * Every reply to operations answered once sent is read, without blocking (DESIGN §9 "PostgreSQL
   * round trips"): a round reads the metadata after each await, when requests may have been answered
   * meanwhile, and a read would wait for them holding the thread. The read comes at once after it.
   */
  private readonly settled = (): Promise<void> => repliesRead(this.env.db);
  /** The background rounds take a due container once its dead bytes held still for a round. */
  private readonly quiet = new SettledContainers();

  constructor(
    private readonly env: ChunkEnv,
    private readonly files: CompactorHost,
    readonly deadRatio = COMPACT_DEAD_RATIO,
    readonly deadBytesMin = COMPACT_DEAD_BYTES_MIN,
  ) {
    // A full container is sealed in the background: appends go on into a new open container meanwhile.
    files.appender.onFull = (id) => {
      // Stays 'full' when it fails: the next round seals it.
      const run = this.seal(id, emptyCompactReport()).catch((err) => this.noteErrors([`seal ${id}: ${errText(err)}`]));
      this.sealing.add(run);
      void run.finally(() => this.sealing.delete(run));
      return Promise.resolve();
    };
  }

  /** Recovery: drop half-made sealed copies (their chunks to the reclaim queue); the 'full' originals stay. */
  dropUnfinishedSeals(): number {
    const rows = this.files.containers.inState('sealing');
    this.env.db.transaction(() => {
      for (const r of rows) {
        this.files.dropInternal(r.id);
        this.files.containers.remove(r.id);
      }
    })();
    return rows.length;
  }

  /**
   * Retire open containers past the dead ratio (appends move on to a new one), seal every full
   * container, then compact those past the dead ratio. An open container that is mostly dead would
   * otherwise hold its dead needles until it filled (256 MiB): under small-file churn that was most
   * of a store's space (27 MB of dead needles, 81 MB stored, for 8 MB live). A background round
   * (`background`) takes a due container only once its dead bytes held still for a round.
   */
  async runOnce(report = emptyCompactReport(), background = false): Promise<CompactReport> {
    await Promise.all([...this.sealing]); // a seal an append started finishes first
    // A background round leaves containers still gaining dead bytes for a later one (DESIGN §5
    // "Small files": removals in progress would soon make the copied needles dead too).
    const take = (due: ContainerRow[]): ContainerRow[] => (background ? this.quiet.take(due) : due);
    if (background) this.quiet.startRound();
    // The containers are read once every reply is, not blocking the thread behind operations
    // answered once sent (DESIGN §9 "PostgreSQL round trips"): at the start and after each await.
    await this.settled();
    for (const r of take(
      this.files.containers.compactable('open', this.deadRatio, this.deadBytesMin, CONTAINERS_PER_ROUND_MAX),
    )) {
      await this.files.appender
        .retire(r.id)
        .catch((err) => report.errors.push(`retire ${r.id}: ${(err as Error).message}`));
    }
    await this.settled();
    for (const r of this.files.containers.inState('full'))
      await this.seal(r.id, report).catch((err) => report.errors.push(`seal ${r.id}: ${(err as Error).message}`));
    await this.settled();
    for (const r of take(
      this.files.containers.compactable('sealed', this.deadRatio, this.deadBytesMin, CONTAINERS_PER_ROUND_MAX),
    )) {
      await this.compact(r, report).catch((err) =>
        report.errors.push(err instanceof CompactionError ? err.message : `compact ${r.id}: ${(err as Error).message}`),
      );
    }
    return report;
  }

  async seal(id: number, report: CompactReport): Promise<void> {
    if (this.busy.has(id)) return;
    this.busy.add(id);
    try {
      await this.sealFree(id, report);
    } finally {
      this.busy.delete(id);
    }
  }

  private async sealFree(id: number, report: CompactReport): Promise<void> {
    await this.settled();
    const row = this.files.containers.get(id);
    if (row === null || row.state !== 'full') return;
    if (parseLayout(row.packClass).text === openLayoutOf(row.packClass)) {
      this.files.containers.setState(id, 'sealed'); // already in its target layout
      report.sealed++;
      return;
    }
    const copy = this.env.db.transaction(() =>
      this.files.createContainer(row.packClass, 'sealing', id, row.usedBytes, row.deadBytes),
    )();
    await this.copyChunks(row, copy.id, report);
    await this.settled();
    this.env.db.transaction(() => {
      this.files.slices.moveAll(id, copy.id);
      this.files.containers.setState(copy.id, 'sealed');
      this.files.dropInternal(id);
      this.files.containers.remove(id);
    })();
    this.files.forgetAll();
    report.sealed++;
  }

  /** The old container's bytes [0, used) as whole chunks of the copy (spec §8.1, target layout). */
  private async copyChunks(row: ContainerRow, copyId: number, report: CompactReport): Promise<void> {
    const cs = this.files.layoutOf(row.id).chunkSizeBytes;
    const chunks = Math.ceil(row.usedBytes / cs);
    for (let c0 = 0; c0 < chunks; c0 += SEAL_CHUNKS_PER_WRITE_MAX) {
      const pieces = [];
      for (let c = c0; c < Math.min(chunks, c0 + SEAL_CHUNKS_PER_WRITE_MAX); c++) {
        await this.settled();
        const ref = this.files.chunkRef(row.id, c);
        if (ref === null) continue; // never written: a hole in the copy too
        const len = Math.min(ref.logicalLenBytes, row.usedBytes - c * cs); // the zero tail past used is not copied
        pieces.push({ c, offIn: 0, bytes: await readChunk(this.env, ref, 0, len) });
        report.bytesCopied += len;
      }
      if (pieces.length > 0) await this.files.writeInternal(copyId, pieces);
    }
  }

  /** Move the live needles of a sealed container to the open one, then reclaim it. */
  async compact(row: ContainerRow, report: CompactReport): Promise<void> {
    if (this.busy.has(row.id)) return;
    this.busy.add(row.id);
    try {
      await this.compactFree(row, report);
    } finally {
      this.busy.delete(row.id);
    }
  }

  /**
   * Each live needle appended to the open container of its pack class and repointed in that append's
   * transaction; one whose append failed stays readable where it was, and the container is kept (a
   * slice still names it) for a later round: the round reports it (CompactionError).
   */
  private async compactFree(row: ContainerRow, report: CompactReport): Promise<void> {
    await this.settled();
    // No slice names it (every file in it removed, as after an `rm -rf`): nothing to read or move.
    const live = this.files.slices.countIn(row.id) === 0 ? [] : await this.liveNeedles(row);
    const failures: unknown[] = [];
    await Promise.all(
      live.map(async (n) => {
        await this.files.appender
          .append({
            ino: n.ino,
            packClass: row.packClass,
            data: n.data,
            commit: (slice) => {
              // The copy is dead at once.
              if (!this.files.slices.setIf(n.ino, n.slice, slice)) throw new NeedleRewritten(n.ino);
            },
          })
          .then(
            () => {
              report.needlesMoved++;
            },
            (err) => {
              if (!(err instanceof NeedleRewritten)) failures.push(err);
            },
          );
      }),
    );
    await this.settled();
    const dropped = this.env.db.transaction(() => {
      if (this.files.slices.countIn(row.id) > 0) return false; // a slice still names it: keep it for a later round
      this.files.dropInternal(row.id);
      this.files.containers.remove(row.id);
      return true;
    })();
    this.files.forgetAll();
    if (dropped) report.compacted++;
    if (failures.length === 0) return;
    report.needlesFailed += failures.length;
    throw new CompactionError(
      row.id,
      failures.length,
      live.length,
      this.appendTarget(row.packClass),
      (failures[0] as Error).message,
    );
  }

  /** The open container the appends of a pack class go to (its disks: in the cause, store/chunks/chunk-io.ts). */
  private appendTarget(packClass: string): string {
    const open = this.files.containers.openOf(packClass);
    return open === null ? `a new ${packClass} container` : `container ${open.id}`;
  }

  /** Every needle of the container that its file's slice still names, with its data. */
  private async liveNeedles(row: ContainerRow): Promise<Array<{ ino: number; slice: Slice; data: Buffer }>> {
    const out: Array<{ ino: number; slice: Slice; data: Buffer }> = [];
    const cs = this.files.layoutOf(row.id).chunkSizeBytes;
    let needles = 0;
    for (let c = 0; c * cs < row.usedBytes; c++) {
      await this.settled();
      const ref = this.files.chunkRef(row.id, c);
      if (ref === null) continue;
      const bytes = await readChunk(this.env, ref, 0, Math.min(ref.logicalLenBytes, row.usedBytes - c * cs));
      await this.settled(); // the slices are read after the chunk's bytes
      for (let at = 0; at + NEEDLE_HEADER_BYTES <= bytes.length && needles < NEEDLES_PER_CONTAINER_MAX; needles++) {
        if (!bytes.subarray(at, at + 4).equals(NEEDLE_MAGIC)) break; // the zero gap before the next chunk (DESIGN §3)
        const h = decodeNeedleHeader(bytes.subarray(at));
        const offset = BigInt(c * cs + at);
        const cur = this.files.slices.get(Number(h.fileId));
        if (
          cur !== null &&
          cur.containerId === BigInt(row.id) &&
          cur.offsetBytes === offset &&
          cur.cookie === h.cookie
        ) {
          out.push({
            ino: Number(h.fileId),
            slice: cur,
            data: Buffer.from(bytes.subarray(at + NEEDLE_HEADER_BYTES, at + NEEDLE_HEADER_BYTES + h.dataLenBytes)),
          });
        }
        at += needleSpanBytes(h.dataLenBytes);
      }
    }
    return out;
  }

  /** Background: a round, then a pause that grows with the bytes copied (rate limit). */
  start(): void {
    if (this.timer !== null) return;
    this.stopped = false;
    const loop = (pauseMs: number): void => {
      if (this.stopped) return;
      this.timer = setTimeout(() => {
        // A failed round (the metadata database away, DESIGN §9; a disk error) is tried again after
        // the pause: unhandled, it was an unhandled rejection and compaction stopped for good.
        this.running = this.runOnce(emptyCompactReport(), true).then(
          (r) => {
            this.running = null;
            this.noteErrors(r.errors);
            loop(ROUND_PAUSE_MS + Math.ceil(r.bytesCopied / (1 << 20)) * PAUSE_PER_MIB_MS);
          },
          (err: unknown) => {
            this.running = null;
            this.noteErrors([`compaction round: ${errText(err)}`]);
            loop(ROUND_PAUSE_MS);
          },
        );
      }, pauseMs);
      this.timer.unref();
    };
    loop(ROUND_PAUSE_MS);
  }

  /**
   * A background round's errors: counted (status, metrics) and logged, one line naming the first
   * (its container, where the appends went and their disks) at most every ERROR_LOG_INTERVAL_MS.
   */
  private noteErrors(errors: readonly string[]): void {
    if (errors.length === 0) return;
    this.roundErrors += errors.length;
    this.lastError = errors[0];
    this.unlogged += errors.length;
    const now = Date.now();
    if (now - this.loggedMs < ERROR_LOG_INTERVAL_MS) return;
    this.loggedMs = now;
    const more = this.unlogged > 1 ? ` (+${this.unlogged - 1} more since the last line: chunkfs status)` : '';
    this.unlogged = 0;
    this.log(`compactor: ${errors[0]}${more}`);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
    await Promise.all([...this.sealing]);
  }
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
