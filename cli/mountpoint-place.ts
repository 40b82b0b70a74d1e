// A mount point inside the store directory or one of its disks is refused before anything is made
// (DESIGN §7): the store would hold its own file system, so a copy or backup of the store directory,
// or an rm -r of it, would walk into every file the mount serves.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** p with symlinks resolved as far as it exists (a mount point may not exist yet). */
function realPathAsFarAsItExists(p: string): string {
  const rest: string[] = [];
  for (let cur = p; ; cur = path.dirname(cur)) {
    try {
      return path.join(fs.realpathSync(cur), ...rest.reverse());
    } catch {
      if (path.dirname(cur) === cur) return p;
      rest.push(path.basename(cur));
    }
  }
}

function within(parent: string, p: string): boolean {
  const rel = path.relative(parent, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** The disk directories chunkfs.json names; none when it cannot be read (the opener says why later). */
function diskDirs(storeDir: string): string[] {
  try {
    const config = JSON.parse(fs.readFileSync(path.join(storeDir, 'chunkfs.json'), 'utf8')) as {
      disks?: Array<{ path?: unknown }>;
    };
    return (config.disks ?? []).flatMap((d) => (typeof d.path === 'string' ? [path.resolve(storeDir, d.path)] : []));
  } catch {
    return [];
  }
}

/** Why mountpoint cannot serve storeDir (it lies inside the store or a disk of it), or null. */
export function mountpointInsideStore(mountpoint: string, storeDir: string): string | null {
  // Not the mount point itself: it may be a mount whose process is stopped, and a stat of it hangs.
  const mp = path.join(realPathAsFarAsItExists(path.dirname(mountpoint)), path.basename(mountpoint));
  for (const [what, dir] of [['store', storeDir], ...diskDirs(storeDir).map((d) => ['disk', d])] as const) {
    const real = realPathAsFarAsItExists(dir);
    if (within(real, mp))
      return `${mountpoint} is ${real === mp ? '' : 'inside '}the ${what} ${what === 'store' ? dir : `directory ${dir} of store ${storeDir}`}; mount it elsewhere`;
  }
  return null;
}
