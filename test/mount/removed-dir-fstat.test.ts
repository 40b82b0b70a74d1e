// xfstests generic/035: a directory that is removed while open (rmdir, or
// replaced by a rename) still answers fstat on its descriptor, with nlink 0, and lists nothing, as
// on Linux file systems (fs/gone-dirs.ts). fuse-native (libfuse 2 high-level) asks by path, which
// is gone: there fstat stays ENOENT, and only the rename itself is checked.
import test from 'ava';
import { sharedMount, run, PYTHON, TRANSPORT } from '../helpers/mount';

const FUSE3 = TRANSPORT !== 'fuse-native';
const shared = sharedMount(test, 'removeddir');

const SCRIPT = `
import json, os, sys
m = sys.argv[1]
out = {}
os.mkdir(m + '/a'); os.mkdir(m + '/b'); os.mkdir(m + '/c')
open(m + '/b/inside', 'w').close()
fa = os.open(m + '/a', os.O_RDONLY | os.O_DIRECTORY)
fc = os.open(m + '/c', os.O_RDONLY | os.O_DIRECTORY)
os.rename(m + '/b', m + '/a')   # b replaces the empty, open a
os.rmdir(m + '/c')              # c removed while open
for name, fd in [('renamed_over', fa), ('rmdir', fc)]:
    try:
        st = os.fstat(fd)
        out[name] = {'nlink': st.st_nlink, 'dir': (st.st_mode & 0o170000) == 0o040000, 'listed': os.listdir(fd)}
    except OSError as e:
        out[name] = os.strerror(e.errno)
    os.close(fd)
out['a_now'] = sorted(os.listdir(m + '/a'))
print(json.dumps(out))
`;

test('fstat of an open directory that was renamed over or removed: nlink 0, empty listing', async (t) => {
  const r = await run(PYTHON, ['-c', SCRIPT, shared.mount.mountpoint]);
  t.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  t.deepEqual(out.a_now, ['inside']);
  if (!FUSE3) {
    t.is(out.renamed_over, 'No such file or directory');
    return;
  }
  t.deepEqual(out.renamed_over, { nlink: 0, dir: true, listed: [] });
  t.deepEqual(out.rmdir, { nlink: 0, dir: true, listed: [] });
});
