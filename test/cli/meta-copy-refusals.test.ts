// `chunkfs meta copy` on a bad day (DESIGN §9): a mistyped --to, a copy onto the metadata's own place,
// a wrong or missing store key are refused in one line naming the thing, before anything is opened
// read-write: the intent log fold (an open and a close) runs only once the move is known to be sound.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { chunkfsCli, chunkfsOk, removeDir, tempDir } from '../helpers/mount';

let dir = '';
test.before(async () => {
  dir = await tempDir('meta-copy-refusals');
});
test.after.always(async () => {
  if (dir !== '') await removeDir(dir);
});

/** Every file and directory under root with its size and modification time: what a refusal must not change. */
function state(root: string): string[] {
  return (fs.readdirSync(root, { recursive: true, encoding: 'utf8' }) as string[]).sort().map((p) => {
    const st = fs.statSync(path.join(root, p));
    return `${p} ${st.size} ${st.mtimeMs}`;
  });
}

test.serial('meta copy refuses a bad --to, itself and a wrong key in one line; nothing is changed', async (t) => {
  const store = `${dir}/s`;
  const key = `${dir}/store.key`;
  await chunkfsOk(['mkfs', store, '--disks', '3', '--layout', 'replica:3,aes256gcm', '--keyfile', key]);
  fs.writeFileSync(`${dir}/wrong.key`, Buffer.alloc(32, 7), { mode: 0o600 });
  const withKey = { env: { ...process.env, CHUNKFS_KEYFILE: key } };
  const cases: Array<[string[], RegExp, { env: NodeJS.ProcessEnv }?]> = [
    [
      ['--to', 'postgress://u@localhost/db'],
      /'postgress:\/\/u@localhost\/db': scheme 'postgress:' is not postgres:/,
      withKey,
    ],
    [['--to', 'sqlite:/x'], /'sqlite:\/x': SQLite takes no location/, withKey],
    [['--to', 'postgres://u:secret@localhost/db'], /'postgres:\/\/u:\*\*\*@localhost\/db': holds a password/, withKey],
    [['--to', 'sqlite'], new RegExp(`${store}: its metadata is in ${store}/meta.db already; nothing to copy`), withKey],
    [['--to', 'sqlite', '--keyfile', `${dir}/wrong.key`], /wrong\.key is not the key of store .*; nothing was changed/],
    [
      ['--to', 'sqlite'],
      /wrong\.key is not the key of store/,
      { env: { ...process.env, CHUNKFS_KEYFILE: `${dir}/wrong.key` } },
    ],
    [['--to', 'sqlite'], new RegExp(`store ${store} keeps its key outside the store`)],
  ];
  const before = state(store);
  for (const [args, said, opts] of cases) {
    const r = await chunkfsCli(['meta', 'copy', store, ...args], opts);
    t.is(r.code, 1, args.join(' '));
    t.regex(r.stderr, new RegExp(`^chunkfs meta copy: .*${said.source}`), args.join(' '));
    t.is(r.stderr.trim().split('\n').length, 1, r.stderr);
    t.notRegex(r.stderr, /secret/);
    t.deepEqual(state(store), before, `${args.join(' ')}: nothing changed`);
  }
  await chunkfsOk(['fsck', store], withKey);
  // A mistyped store: one line naming it, nothing made.
  const typo = await chunkfsCli(['meta', 'copy', `${store}x`, '--to', 'sqlite']);
  t.is(typo.code, 1);
  t.is(
    typo.stderr,
    `chunkfs meta copy: ${store}x is not a chunkfs store (no chunkfs.json there); name the store directory\n`,
  );
  t.false(fs.existsSync(`${store}x`));
});
