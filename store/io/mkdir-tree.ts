// Creating a directory and its missing parents, with a bound. Node's own recursive mkdir retries
// forever where mkdir(2) says ENOENT under a parent that exists: procfs and sysfs do that (measured:
// `mkfs --disk /proc/x` spun at 100% CPU, 12,000 mkdir calls a second). Here each missing level
// is made once, parents first, and a level the kernel still refuses ends the walk with its error.
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { ChunkfsError } from '../../src/errors';

/** Levels created at most: far deeper than any disk or store path, a bound on the walk. */
export const MKDIR_DEPTH_MAX = 64;

/** A directory (or one of its missing parents, named) could not be made. */
export class MkdirTreeError extends ChunkfsError {
  constructor(
    readonly path: string,
    readonly code: string,
  ) {
    super(`cannot create directory ${path}: ${code}`);
  }
}

function codeOf(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? String(err);
}

/** mkdir -p with private modes, synchronous: each missing level made once, parents first. */
export function mkdirTreeSync(path: string, mode: number, depth = 0): void {
  try {
    fs.mkdirSync(path, { mode });
    return;
  } catch (err) {
    if (codeOf(err) === 'EEXIST') return mustBeDir(path, fs.statSync(path).isDirectory());
    if (codeOf(err) !== 'ENOENT') throw new MkdirTreeError(path, codeOf(err));
  }
  mkdirTreeSync(parentOf(path, depth), mode, depth + 1);
  try {
    fs.mkdirSync(path, { mode });
  } catch (err) {
    if (codeOf(err) !== 'EEXIST') throw new MkdirTreeError(path, codeOf(err));
  }
}

/** The same on the event loop: the common case (the directory exists) is one mkdir and one stat. */
export async function mkdirTree(path: string, mode: number, depth = 0): Promise<void> {
  try {
    await fs.promises.mkdir(path, { mode });
    return;
  } catch (err) {
    if (codeOf(err) === 'EEXIST') return mustBeDir(path, (await fs.promises.stat(path)).isDirectory());
    if (codeOf(err) !== 'ENOENT') throw new MkdirTreeError(path, codeOf(err));
  }
  await mkdirTree(parentOf(path, depth), mode, depth + 1);
  try {
    await fs.promises.mkdir(path, { mode });
  } catch (err) {
    if (codeOf(err) !== 'EEXIST') throw new MkdirTreeError(path, codeOf(err));
  }
}

/** The parent to make first; the walk ends at the root or at MKDIR_DEPTH_MAX levels. */
function parentOf(path: string, depth: number): string {
  const parent = nodePath.dirname(nodePath.resolve(path));
  if (depth >= MKDIR_DEPTH_MAX) throw new MkdirTreeError(path, 'more than ' + MKDIR_DEPTH_MAX + ' levels missing');
  if (parent === nodePath.resolve(path)) throw new MkdirTreeError(path, 'ENOENT');
  return parent;
}

function mustBeDir(path: string, isDir: boolean): void {
  if (!isDir) throw new MkdirTreeError(path, 'ENOTDIR');
}
