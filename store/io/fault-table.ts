// Faults injected into a live store's disks (`chunkfs inject`; DESIGN §7: "make a disk
// return EIO / ENOSPC / latency for N operations", "take a disk offline"). The table is consulted by
// store/io/inject-io.ts on every Io and SyncIo call while at least one fault is set; with none set,
// `armed` is false and those wrappers call straight through. Faults end after a count of matching
// operations, after a duration (checked lazily on the next match or list: no timers), or when cleared.
import { ChunkfsError } from '../../src/errors';

export type FaultKind = 'eio' | 'enospc' | 'latency' | 'offline';
/** Which operations a fault hits: reads (open for read, pread, stat, readdir, ...), writes, or all. */
export type FaultOps = 'read' | 'write' | 'all';
export type OpClass = 'read' | 'write';

export interface FaultSpec {
  kind: FaultKind;
  diskId: number;
  /** The disk directory: every path at or beneath it is hit. */
  root: string;
  ops: FaultOps;
  /** Hit this many matching operations, then end (absent: until cleared or expired). */
  count?: number;
  /** End this long after it was set (absent: until cleared or spent). */
  durationMs?: number;
  /** kind 'latency': added before each matching operation. */
  latencyMs?: number;
}

export interface Fault extends FaultSpec {
  id: number;
  addedMs: number;
  /** Matching operations so far. */
  hits: number;
}

/** At most this many faults at once; more are refused (a bounded table, scanned per call). */
export const FAULTS_MAX = 64;
/** A latency fault adds at most this much per operation (an hour-long stall is no test). */
export const FAULT_LATENCY_MS_MAX = 60_000;

/** Operations that can run out of space; ENOSPC never hits a read, an unlink or a chmod. */
const ALLOCATING_OPS: ReadonlySet<string> = new Set([
  'create',
  'pwrite',
  'write',
  'mkdir',
  'rename',
  'link',
  'ftruncate',
  'fsync',
  'fdatasync',
  'syncfs',
]);

const ERROR_CODE: Record<Exclude<FaultKind, 'latency'>, 'EIO' | 'ENOSPC' | 'ENODEV'> = {
  eio: 'EIO',
  enospc: 'ENOSPC',
  offline: 'ENODEV',
};

/** The error an injected fault makes an operation fail with; code is the errno name, like a Node system error. */
export class InjectedFaultError extends ChunkfsError {
  constructor(
    readonly code: 'EIO' | 'ENOSPC' | 'ENODEV',
    readonly faultId: number,
    op: string,
    diskId: number,
  ) {
    super(`${code}: injected fault #${faultId} on ${op}`, { diskId: String(diskId) });
  }
}

export class FaultTableError extends ChunkfsError {}

function under(root: string, path: string): boolean {
  return path === root || (path.startsWith(root) && path.charCodeAt(root.length) === 47) /* '/' */;
}

export class FaultTable {
  private faults: Fault[] = [];
  private nextId = 1;
  /** False when no fault is set: the Io wrappers then cost one property read per call. */
  armed = false;
  /** Told when a fault is set: reads made outside the Io (read grants) must stop at once (cli/live-store.ts). */
  onAdd: () => void = () => undefined;

  add(spec: FaultSpec, nowMs = Date.now()): Fault {
    this.prune(nowMs);
    if (this.faults.length >= FAULTS_MAX)
      throw new FaultTableError(`at most ${FAULTS_MAX} faults at once; clear some first`);
    if (spec.count !== undefined && (!Number.isSafeInteger(spec.count) || spec.count < 1))
      throw new FaultTableError(`count ${spec.count} must be a whole number >= 1`);
    if (
      spec.kind === 'latency' &&
      !(Number.isSafeInteger(spec.latencyMs) && spec.latencyMs! >= 1 && spec.latencyMs! <= FAULT_LATENCY_MS_MAX)
    ) {
      throw new FaultTableError(`latency must be 1..${FAULT_LATENCY_MS_MAX} ms`);
    }
    const fault: Fault = { ...spec, id: this.nextId++, addedMs: nowMs, hits: 0 };
    this.faults.push(fault);
    this.armed = true;
    this.onAdd();
    return { ...fault };
  }

  /** Remove faults: one by id, every fault of a kind on a disk, or (no filter) all. Returns how many. */
  clear(filter: { id?: number; diskId?: number; kind?: FaultKind } = {}): number {
    const before = this.faults.length;
    this.faults = this.faults.filter(
      (f) =>
        !(
          (filter.id === undefined || f.id === filter.id) &&
          (filter.diskId === undefined || f.diskId === filter.diskId) &&
          (filter.kind === undefined || f.kind === filter.kind)
        ),
    );
    this.armed = this.faults.length > 0;
    return before - this.faults.length;
  }

  /** The faults still in force (expired ones are dropped first). */
  list(nowMs = Date.now()): Fault[] {
    this.prune(nowMs);
    return this.faults.map((f) => ({ ...f }));
  }

  /** Remaining operations or milliseconds of a fault, for listings. */
  static remaining(f: Fault, nowMs = Date.now()): { count?: number; ms?: number } {
    return {
      count: f.count === undefined ? undefined : f.count - f.hits,
      ms: f.durationMs === undefined ? undefined : Math.max(0, f.addedMs + f.durationMs - nowMs),
    };
  }

  /** Is disk diskId held offline by a fault? */
  offline(diskId: number, nowMs = Date.now()): boolean {
    this.prune(nowMs);
    return this.faults.some((f) => f.kind === 'offline' && f.diskId === diskId);
  }

  private prune(nowMs: number): void {
    const kept = this.faults.filter(
      (f) =>
        (f.durationMs === undefined || nowMs < f.addedMs + f.durationMs) && (f.count === undefined || f.hits < f.count),
    );
    if (kept.length !== this.faults.length) this.faults = kept;
    this.armed = this.faults.length > 0;
  }

  /**
   * One operation on path: the latency to add and the error to fail with (each matching fault
   * counts the operation as a hit). ENOSPC only ever hits writes that allocate (ALLOCATING_OPS). offlineOnly: only 'offline' faults
   * apply (the small files' SyncIo: a disk's identity check must not eat an EIO fault's count).
   */
  check(
    opClass: OpClass,
    op: string,
    path: string,
    nowMs = Date.now(),
    offlineOnly = false,
  ): { delayMs: number; error: InjectedFaultError | null } {
    let delayMs = 0;
    let error: InjectedFaultError | null = null;
    let spent = false;
    for (const f of this.faults) {
      if (f.ops !== 'all' && f.ops !== opClass) continue;
      if (offlineOnly && f.kind !== 'offline') continue;
      if (f.kind === 'enospc' && (opClass !== 'write' || !ALLOCATING_OPS.has(op))) continue;
      if (!under(f.root, path)) continue;
      if (f.durationMs !== undefined && nowMs >= f.addedMs + f.durationMs) {
        spent = true;
        continue;
      }
      if (f.count !== undefined && f.hits >= f.count) {
        spent = true;
        continue;
      }
      if (f.kind === 'latency') {
        f.hits++;
        delayMs += f.latencyMs ?? 0;
      } else if (error === null) {
        f.hits++;
        error = new InjectedFaultError(ERROR_CODE[f.kind], f.id, `${op} ${path}`, f.diskId);
      }
      if (f.count !== undefined && f.hits >= f.count) spent = true;
    }
    if (spent) this.prune(nowMs);
    return { delayMs, error };
  }
}
