// overlayfs with its upper and work directories on chunkfs (filesystem.md, Features): deleting or renaming
// a lower file leaves a whiteout, which overlayfs makes with renameat2(RENAME_WHITEOUT) (the mount
// answers it: fs/ops-names.ts) and which a kernel of 6.x requires of an upper file system before it
// mounts at all. chunkfs keeps only user.* xattrs, so the overlay is mounted with `userxattr`.
// fuse-native (libfuse 2) has no rename flags: the kernel refuses RENAME_WHITEOUT there, and so does
// overlayfs the upper directory.
import test from 'ava';
import { promises as fsp } from 'node:fs';
import { sharedMount, fsClient, run, shOk, isMounted, TRANSPORT } from '../helpers/mount';

const FUSE3 = TRANSPORT !== 'fuse-native';
const UMOUNT_TIMEOUT_MS = 15_000;
const S_IFMT = 0o170000;
const S_IFCHR = 0o020000;

const shared = sharedMount(test, 'overlay');

interface Overlay {
  lower: string;
  upper: string;
  merged: string;
}

async function dirs(): Promise<Overlay> {
  const o = { lower: `${shared.dir}/lower`, upper: shared.path('upper'), merged: `${shared.dir}/merged` };
  for (const d of [o.lower, o.merged]) await fsp.mkdir(d, { recursive: true });
  await fsClient([
    ['mkdir', o.upper],
    ['mkdir', shared.path('work')],
  ]);
  return o;
}

function mountOverlay(o: Overlay): Promise<{ code: number | null; stderr: string }> {
  const opts = `userxattr,lowerdir=${o.lower},upperdir=${o.upper},workdir=${shared.path('work')}`;
  return run('mount', ['-t', 'overlay', 'overlay', '-o', opts, o.merged], { timeoutMs: UMOUNT_TIMEOUT_MS });
}

/** The overlay goes before the chunkfs mount under it, even when the test failed. */
async function umountOverlay(o: Overlay): Promise<void> {
  if (!isMounted(o.merged)) return;
  const r = await run('umount', [o.merged], { timeoutMs: UMOUNT_TIMEOUT_MS });
  if (r.code !== 0) await run('umount', ['-l', o.merged], { timeoutMs: UMOUNT_TIMEOUT_MS });
}

test.serial(
  'overlayfs on a chunkfs upper directory: a deleted or renamed lower file leaves a 0/0 whiteout, also after a remount',
  async (t) => {
    const o = await dirs();
    t.teardown(() => umountOverlay(o));
    await fsp.writeFile(`${o.lower}/gone`, 'lower bytes');
    await fsp.writeFile(`${o.lower}/moved`, 'moved bytes');
    await fsp.writeFile(`${o.lower}/kept`, 'kept bytes');
    const m = await mountOverlay(o);
    if (!FUSE3) {
      t.not(m.code, 0, 'no RENAME_WHITEOUT through libfuse 2: overlayfs refuses the upper directory');
      return;
    }
    t.is(m.code, 0, m.stderr);
    await shOk(`rm ${o.merged}/gone && mv ${o.merged}/moved ${o.merged}/renamed`);
    const seen = async (): Promise<void> => {
      t.deepEqual((await shOk(`ls ${o.merged}`)).trim().split('\n').sort(), ['kept', 'renamed']);
      t.is(await shOk(`cat ${o.merged}/renamed`), 'moved bytes');
      const st = await fsClient([
        ['lstat', `${o.upper}/gone`],
        ['lstat', `${o.upper}/moved`],
      ]);
      for (const s of st) {
        t.is(s.err, undefined);
        t.is(s.ok.mode & S_IFMT, S_IFCHR, 'a whiteout is a character device...');
        t.is(s.ok.rdev, 0, '...numbered 0/0');
      }
    };
    await seen();
    await umountOverlay(o);
    await shared.remount();
    t.is((await mountOverlay(o)).code, 0);
    await seen();
  },
);
