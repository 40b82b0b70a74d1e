// Which store a verb works on: a store directory, a chunkfs mount point (its mount
// source names the store, cli/mounts.ts), or nothing (the default store). Resolved from the
// mount table and the store's config file only, so a hung mount never hangs the CLI.
import { accessSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MountEntry, chunkfsMountContaining, chunkfsMounts } from './mounts';

export class TargetError extends Error {}

export interface Target {
  storeDir: string;
  /** Where the store is mounted now, if it is (a live mount may still be shutting down). */
  mountpoint: string | null;
}

/** $XDG_DATA_HOME/chunkfs/default, else ~/.local/share/chunkfs/default. */
export function defaultStorePath(env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.XDG_DATA_HOME !== undefined && env.XDG_DATA_HOME !== ''
      ? env.XDG_DATA_HOME
      : path.join(os.homedir(), '.local', 'share');
  return path.join(base, 'chunkfs', 'default');
}

export function isStoreDir(dir: string): boolean {
  try {
    accessSync(path.join(dir, 'chunkfs.json'));
    return true;
  } catch {
    return false;
  }
}

/** The store a chunkfs mount serves; mounts of builds that did not name their store cannot say. */
function storeOfMount(m: MountEntry): string {
  if (path.isAbsolute(m.source) && isStoreDir(m.source)) return m.source;
  throw new TargetError(
    `${m.mountpoint} is a chunkfs mount whose source '${m.source}' is not a store directory ` +
      '(mounted by an older chunkfs?); give the store directory instead',
  );
}

function mountOf(storeDir: string): string | null {
  return (
    chunkfsMounts()
      .reverse()
      .find((m) => m.source === storeDir)?.mountpoint ?? null
  );
}

/** arg: a store directory, a chunkfs mount point, or undefined for the default store. */
export function resolveTarget(arg: string | undefined, env: NodeJS.ProcessEnv = process.env): Target {
  if (arg === undefined) {
    const storeDir = defaultStorePath(env);
    if (!isStoreDir(storeDir))
      throw new TargetError(
        `no store given and the default store ${storeDir} does not exist (chunkfs mount creates it)`,
      );
    return { storeDir, mountpoint: mountOf(storeDir) };
  }
  const abs = path.resolve(arg);
  const m = chunkfsMountContaining(abs);
  if (m !== null && m.mountpoint === abs) return { storeDir: storeOfMount(m), mountpoint: abs };
  if (m !== null)
    throw new TargetError(
      `${abs} is inside the chunkfs mount ${m.mountpoint}; give the mount point or the store directory`,
    );
  if (isStoreDir(abs)) return { storeDir: abs, mountpoint: mountOf(abs) };
  throw new TargetError(`${abs} is neither a chunkfs store nor a chunkfs mount point`);
}

/**
 * A file named by a verb (inject, inspect): a path inside a chunkfs mount names that mount's store
 * and the path relative to its root; any other path is taken as a path inside the filesystem of
 * the store named by storeArg (or the default store), e.g. /dir/file.
 */
export function resolveFile(
  fileArg: string,
  storeArg: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): { target: Target; relPath: string } {
  const abs = path.resolve(fileArg);
  const m = chunkfsMountContaining(abs);
  if (m !== null) {
    const target: Target = { storeDir: storeOfMount(m), mountpoint: m.mountpoint };
    if (storeArg !== undefined) {
      const given = resolveTarget(storeArg, env);
      if (given.storeDir !== target.storeDir)
        throw new TargetError(`${abs} is in the mount of ${target.storeDir}, not of ${given.storeDir}`);
    }
    return { target, relPath: path.relative(m.mountpoint, abs) };
  }
  if (!fileArg.startsWith('/')) {
    throw new TargetError(
      `${fileArg} is not inside a chunkfs mount; name a file by its path in a mount, or as /path/in/the/filesystem with the store`,
    );
  }
  // Without a store, a path outside every mount is read in the default store: when there is none,
  // the path was more likely meant as a file in a mount (a typo, or the mount is gone).
  if (storeArg === undefined && !isStoreDir(defaultStorePath(env)))
    throw new TargetError(
      `${abs} is not inside a chunkfs mount, and no store is given to look it up in (the default store ` +
        `${defaultStorePath(env)} does not exist); name a file in a mount, or /path/in/the/filesystem with the store`,
    );
  return { target: resolveTarget(storeArg, env), relPath: path.posix.normalize(fileArg).replace(/^\/+/, '') };
}
