// mkfs leaves nothing behind when it fails (docs/design.md §4 "mkfs"): the store directory is built
// in a temporary sibling directory and moved into place at the end, chunkfs.json last; what mkfs has
// to make outside it (disk directories named by --disk, an external key file, missing parents) is
// recorded as it is made, and a failed mkfs removes exactly that, never what was there before.
import * as crypto from 'node:crypto';
import * as path from 'node:path';
import { ConfigError } from './config';
import { statToMake } from './mkfs-path';
import { PRIVATE_DIR_MODE, SyncIo } from './io/sync-io';

/** Random bytes in the staging directory's name (two mkfs runs side by side never share one). */
const STAGING_NAME_RANDOM_BYTES = 6;
/** The file moved into an existing target last: a store is a store once its config is there. */
const LAST_ENTRY = 'chunkfs.json';

function inside(parent: string, p: string): boolean {
  const rel = path.relative(parent, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

export class MkfsStaging {
  /** Paths mkfs made outside the staging directory, in the order made (undone newest first). */
  private readonly made: string[] = [];
  private done = false;

  private constructor(
    readonly io: SyncIo,
    readonly target: string,
    readonly dir: string,
    private readonly targetExisted: boolean,
  ) {}

  /** Refuses a target that is not an empty directory; makes the staging directory beside it. */
  static begin(io: SyncIo, target: string): MkfsStaging {
    const st = statToMake(io, target, 'store directory');
    if (st !== null && io.readdir(target).length > 0) {
      throw new ConfigError(target, 'target directory is not empty; refusing to create a store there');
    }
    const parent = path.dirname(target);
    const missingTop = MkfsStaging.topMissing(io, parent);
    const name = `.${path.basename(target)}.mkfs-${crypto.randomBytes(STAGING_NAME_RANDOM_BYTES).toString('hex')}`;
    const staging = new MkfsStaging(io, target, path.join(parent, name), st !== null);
    if (missingTop !== null) {
      io.mkdirPrivate(parent);
      staging.made.push(missingTop);
    }
    assertAbsent(io, staging.dir);
    io.mkdirPrivate(staging.dir);
    return staging;
  }

  /** The outermost missing directory on the way to p, or null when p exists. */
  private static topMissing(io: SyncIo, p: string): string | null {
    let top: string | null = null;
    for (let cur = p; io.stat(cur) === null; cur = path.dirname(cur)) {
      top = cur;
      if (path.dirname(cur) === cur) break;
    }
    return top;
  }

  /** Where a path of the finished store is built: inside the target, its place in the staging directory. */
  buildPath(finalPath: string): string {
    const abs = path.resolve(this.target, finalPath);
    return inside(this.target, abs) ? path.join(this.dir, path.relative(this.target, abs)) : abs;
  }

  /** A directory of the store (a disk): made private; one outside the target made by mkfs is recorded. */
  makeDir(finalPath: string): string {
    const build = this.buildPath(finalPath);
    try {
      const top = inside(this.dir, build) ? null : MkfsStaging.topMissing(this.io, build);
      this.io.mkdirPrivate(build);
      if (top !== null) this.made.push(top);
      this.io.chmod(build, PRIVATE_DIR_MODE);
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new ConfigError(path.resolve(this.target, finalPath), `cannot make it a private disk directory (${why})`);
    }
    return build;
  }

  /** A file made by mkfs outside the staging directory (a disk's marker, an external key file). */
  recordMade(file: string): void {
    if (!inside(this.dir, file)) this.made.push(file);
  }

  /** Moves the built store into place: a rename, or entry by entry into an existing empty target. */
  commit(): void {
    if (!this.targetExisted) {
      this.io.rename(this.dir, this.target);
    } else {
      this.io.chmod(this.target, PRIVATE_DIR_MODE);
      const entries = this.io.readdir(this.dir).sort((a, b) => Number(a === LAST_ENTRY) - Number(b === LAST_ENTRY));
      for (const e of entries) this.io.rename(path.join(this.dir, e), path.join(this.target, e));
      this.io.fsync(this.target);
      this.io.removeTree(this.dir);
    }
    this.io.fsync(path.dirname(this.target));
    this.done = true;
  }

  /** After a failure: removes the staging directory and what mkfs made elsewhere, newest first. */
  abandon(): void {
    if (this.done) return;
    this.io.removeTree(this.dir);
    for (const p of [...this.made].reverse()) this.io.removeTree(p);
    this.done = true;
  }
}

function assertAbsent(io: SyncIo, p: string): void {
  if (io.stat(p) !== null) throw new ConfigError(p, 'exists already; run mkfs again');
}
