// A file named to `chunkfs inject` outside every mount, with no store given and no
// default store: one line saying the path is in no mount, not only that the default store is missing.
import test from 'ava';
import { chunkfsCli, removeDir, tempDir } from '../helpers/mount';

let dir = '';
test.before(async () => {
  dir = await tempDir('file-target');
});
test.after.always(async () => {
  if (dir !== '') await removeDir(dir);
});

test('a file in no mount and no store: one line naming the file and what to give', async (t) => {
  const env = { ...process.env, XDG_DATA_HOME: `${dir}/data` };
  for (const args of [
    ['inject', 'corrupt', `${dir}/mnt/file`],
    ['inject', 'drop', `${dir}/mnt/file`, '--chunk', '0'],
  ]) {
    const r = await chunkfsCli(args, { env });
    t.is(r.code, 1, r.stderr);
    t.is(
      r.stderr,
      `chunkfs ${args[0]}: ${dir}/mnt/file is not inside a chunkfs mount, and no store is given to look it up in ` +
        `(the default store ${dir}/data/chunkfs/default does not exist); name a file in a mount, or ` +
        '/path/in/the/filesystem with the store\n',
    );
  }
});
