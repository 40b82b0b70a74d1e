// `chunkfs mount` refuses a mount point inside the store directory or one of its disks (docs/design.md
// §7): one line naming both, exit 1, no mount point made, nothing mounted.
import test from 'ava';
import * as fs from 'node:fs';
import { chunkfsCli, chunkfsOk, isMounted, removeDir, tempDir } from '../helpers/mount';

let dir = '';
test.before(async () => {
  dir = await tempDir('mount-refusals');
});
test.after.always(async () => {
  if (dir !== '') await removeDir(dir);
});

test.serial('a mount point inside the store or one of its disks is refused, naming both; nothing made', async (t) => {
  const store = `${dir}/store`;
  await chunkfsOk(['mkfs', store, '--disk', `${dir}/d0`, '--disk', `${dir}/d1`, '--layout', 'replica:2']);
  fs.symlinkSync(store, `${dir}/link`);
  const before = fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
  const cases: Array<[string, string]> = [
    [`${store}/mnt`, `${store}/mnt is inside the store ${store}; mount it elsewhere`],
    [`${store}/a/b`, `${store}/a/b is inside the store ${store}; mount it elsewhere`],
    [store, `${store} is the store ${store}; mount it elsewhere`],
    [`${dir}/link/mnt`, `${dir}/link/mnt is inside the store ${store}; mount it elsewhere`],
    [`${dir}/d1/mnt`, `${dir}/d1/mnt is inside the disk directory ${dir}/d1 of store ${store}; mount it elsewhere`],
  ];
  for (const [mountpoint, said] of cases) {
    const r = await chunkfsCli(['mount', store, mountpoint], { timeoutMs: 60_000 });
    t.false(isMounted(mountpoint));
    t.is(r.code, 1, r.stderr);
    t.is(r.stderr, `chunkfs mount: ${said}\n`);
    t.deepEqual(
      fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort(),
      before,
      `${mountpoint}: nothing made`,
    );
  }
});
