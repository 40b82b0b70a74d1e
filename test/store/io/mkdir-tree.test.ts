// mkdirTree makes each missing level once, parents first, private, and ends with an error naming
// the path where the kernel refuses: no endless retry where procfs says ENOENT under /proc.
import test from 'ava';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MKDIR_DEPTH_MAX, MkdirTreeError, mkdirTree, mkdirTreeSync } from '../../../store/io/mkdir-tree';

function tempRoot(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'mkdir-tree-'));
}

for (const [name, make] of [
  ['sync', async (p: string, m: number) => mkdirTreeSync(p, m)],
  ['async', (p: string, m: number) => mkdirTree(p, m)],
] as const) {
  test(`${name}: missing parents are made with the mode; an existing directory is fine`, async (t) => {
    const root = tempRoot();
    const leaf = path.join(root, 'a', 'b', 'c');
    await make(leaf, 0o700);
    for (const p of ['a', 'a/b', 'a/b/c']) t.is(fs.statSync(path.join(root, p)).mode & 0o777, 0o700, p);
    await make(leaf, 0o700);
    fs.rmSync(root, { recursive: true });
  });

  test(`${name}: a file in the way is ENOTDIR, naming the path`, async (t) => {
    const root = tempRoot();
    fs.writeFileSync(path.join(root, 'f'), '');
    const err = await t.throwsAsync(async () => make(path.join(root, 'f'), 0o700), { instanceOf: MkdirTreeError });
    t.is(err?.code, 'ENOTDIR');
    const below = await t.throwsAsync(async () => make(path.join(root, 'f', 'x'), 0o700));
    t.regex(below?.message ?? '', /f\/x.*ENOTDIR/);
    fs.rmSync(root, { recursive: true });
  });

  test(`${name}: under /proc the walk ends with ENOENT instead of spinning`, async (t) => {
    const err = await t.throwsAsync(async () => make('/proc/chunkfs-no-such/d0', 0o700), {
      instanceOf: MkdirTreeError,
    });
    t.regex(err?.message ?? '', /\/proc\/chunkfs-no-such.*ENOENT/);
  });

  test(`${name}: more than MKDIR_DEPTH_MAX missing levels are refused before any is made`, async (t) => {
    const root = tempRoot();
    const deep = path.join(root, ...Array.from({ length: MKDIR_DEPTH_MAX + 2 }, (_, i) => `l${i}`));
    await t.throwsAsync(async () => make(deep, 0o700), { message: /levels missing/ });
    t.deepEqual(fs.readdirSync(root), []);
    fs.rmSync(root, { recursive: true });
  });
}
