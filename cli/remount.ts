// `mount -o remount,ro MNT` (and back to rw) through the mount(8) helper. For
// FUSE a remount is the kernel's business: it changes the generic flags of the mount (ro/rw,
// nosuid, noexec, ...) without asking the file system, and refuses FUSE's own options
// (user_id=, allow_other, ...) on a remount. mount(8) runs the helper with the options of the
// mount merged in (and those of an fstab line), so the helper hands the kernel the generic flags
// alone (mount -i: no helper again) and leaves the rest as mounted: chunkfs's own options (buffer_mb=,
// transport=, ...) keep their values until the next mount. A mount made with -o ro is served
// read-only by chunkfs itself: a remount to rw is refused with that reason.
import { execFile } from 'node:child_process';
import * as path from 'node:path';

/** The generic flags of a mount, as mount(8) names them: what a remount can change. */
const GENERIC_FLAGS = new Set([
  'ro',
  'rw',
  'suid',
  'nosuid',
  'dev',
  'nodev',
  'exec',
  'noexec',
  'atime',
  'noatime',
  'relatime',
  'norelatime',
  'strictatime',
  'nostrictatime',
  'diratime',
  'nodiratime',
  'sync',
  'async',
  'dirsync',
  'lazytime',
  'nolazytime',
  'silent',
  'loud',
]);
const CHILD_TIMEOUT_MS = 30_000;
const CLI_JS = path.join(__dirname, 'cli.js');

/** The options a remount hands the kernel (the generic flags, in order; the last of ro/rw wins). */
export function remountFlags(options: string[]): string[] {
  return options.filter((o) => GENERIC_FLAGS.has(o));
}

function runChild(file: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: CHILD_TIMEOUT_MS, encoding: 'utf8' }, (err, stdout, stderr) => {
      const code =
        err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1;
      resolve({ code, out: `${stdout}${stderr}`.trim() });
    });
  });
}

/** The live chunkfs mount at mountpoint serves it read-only (-o ro); false when it cannot tell. */
async function servedReadOnly(mountpoint: string): Promise<boolean> {
  const r = await runChild(process.execPath, [CLI_JS, 'status', mountpoint, '--json']);
  try {
    return r.code === 0 && (JSON.parse(r.out) as { mount?: { readOnly?: boolean } }).mount?.readOnly === true;
  } catch {
    return false;
  }
}

/** Remount mountpoint with the generic flags among options; throws with the reason. */
export async function remount(mountpoint: string, options: string[]): Promise<void> {
  const flags = remountFlags(options);
  const rw = flags.filter((f) => f === 'ro' || f === 'rw').pop() === 'rw';
  if (rw && (await servedReadOnly(mountpoint))) {
    throw new Error(
      `${mountpoint} was mounted with -o ro, which chunkfs serves read-only itself: unmount it and mount it again without ro`,
    );
  }
  const r = await runChild('mount', ['-i', '-o', ['remount', ...flags].join(','), mountpoint]);
  if (r.code !== 0) throw new Error(`remount of ${mountpoint} failed: ${r.out}`);
}
