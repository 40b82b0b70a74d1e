// The quarantine of the leak scan (DESIGN §4 "Identity"): a shard file the scan removes is moved, not
// deleted, to <disk>/.chunks-quarantine/<stamp>/ under its path below the disk (.chunks/p0/p1/...), on
// the same disk (a rename: no copy, and the same filesystem). A run's folder is deleted once it is
// older than the store's grace period, by a later `scrub --repair` or `fsck --repair`, or by a
// read-write mount (QuarantineSweeper: at start, then hourly); until then
// a mistake is undone by moving the folder's .chunks tree back (README, docs/operations.md).
import * as nodePath from 'node:path';
import { Io, errnoCode } from '../io/io';

export const QUARANTINE_DIR = '.chunks-quarantine';
/** How long removed shard files are kept (the default of the store tunable quarantineGraceDays). */
export const QUARANTINE_GRACE_DAYS_DEFAULT = 7;
const MS_PER_DAY = 86_400_000;
/** A run's folder name: its UTC start, e.g. 20261207T055300Z (sorts by time, no ':' in a path). */
const STAMP_RE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;
/** Entries of one quarantine directory walked at most (a bound on the loop). */
const DIR_ENTRIES_MAX = 1_000_000;

export function graceMsOf(days: number | undefined): number {
  return (days ?? QUARANTINE_GRACE_DAYS_DEFAULT) * MS_PER_DAY;
}

/** The folder name of a run started at nowMs. */
export function quarantineStamp(nowMs: number): string {
  return new Date(nowMs)
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '');
}

function stampMs(name: string): number | null {
  const m = STAMP_RE.exec(name);
  if (m === null) return null;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number);
  return Date.UTC(y, mo - 1, d, h, mi, s);
}

/** Moves one run's removed files into <root>/.chunks-quarantine/<stamp>/, keeping their path below the disk. */
export class Quarantine {
  readonly stamp: string;
  private readonly made = new Set<string>();

  constructor(
    private readonly io: Io,
    nowMs: number,
  ) {
    this.stamp = quarantineStamp(nowMs);
  }

  /** The quarantined path of file (rel: its path below root, e.g. .chunks/ab/cd/...). */
  pathOf(root: string, rel: string): string {
    return nodePath.join(root, QUARANTINE_DIR, this.stamp, rel);
  }

  async move(root: string, rel: string): Promise<string> {
    const to = this.pathOf(root, rel);
    const dir = nodePath.dirname(to);
    if (!this.made.has(dir)) {
      await this.io.mkdir(dir);
      this.made.add(dir);
    }
    await this.io.rename(nodePath.join(root, rel), to);
    await this.io.fsyncDir(dir); // the moved file is found where it went after a crash
    return to;
  }
}

async function listDir(io: Io, dir: string): Promise<string[]> {
  try {
    return (await io.readdir(dir)).slice(0, DIR_ENTRIES_MAX);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return [];
    throw err;
  }
}

/** Delete path (a file or a tree of quarantined files); the number of files deleted. */
async function removeTree(io: Io, path: string): Promise<number> {
  const st = await io.stat(path);
  if (st === null) return 0;
  if (st.kind !== 'dir') {
    await io.unlink(path);
    return 1;
  }
  let files = 0;
  for (const name of await listDir(io, path)) files += await removeTree(io, nodePath.join(path, name));
  await io.rmdir(path);
  return files;
}

/**
 * Delete every run folder under each root's quarantine older than graceMs at nowMs; names that are not
 * a run's stamp are left alone (not ours). The number of files deleted.
 */
export async function emptyExpiredQuarantine(io: Io, roots: string[], nowMs: number, graceMs: number): Promise<number> {
  let files = 0;
  for (const root of roots) {
    const top = nodePath.join(root, QUARANTINE_DIR);
    for (const name of await listDir(io, top)) {
      const at = stampMs(name);
      if (at === null || nowMs - at < graceMs) continue;
      files += await removeTree(io, nodePath.join(top, name));
    }
  }
  return files;
}

/** How often a live mount deletes quarantine folders past their grace period (and once when it starts). */
export const QUARANTINE_SWEEP_MS = 3_600_000;

/** A live mount's part in emptying the quarantine, beside scrub and fsck (DESIGN §4): at start, then hourly. */
export class QuarantineSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  /** Files deleted by this sweeper so far. */
  emptied = 0;

  constructor(
    private readonly io: Io,
    private readonly roots: () => string[],
    private readonly graceMs: number,
    private readonly log: (line: string) => void,
  ) {}

  start(): void {
    this.sweep();
    this.timer = setInterval(() => this.sweep(), QUARANTINE_SWEEP_MS);
    this.timer.unref();
  }

  private sweep(): void {
    this.running = this.running.then(async () => {
      try {
        this.emptied += await emptyExpiredQuarantine(this.io, this.roots(), Date.now(), this.graceMs);
      } catch (err) {
        this.log(`emptying the quarantine failed (tried again in an hour): ${(err as Error).message}`);
      }
    });
  }

  /** No sweep after this returns. */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
