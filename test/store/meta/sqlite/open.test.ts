// Opening meta.db after a crash (store/meta/sqlite/open.ts): a writer killed with SIGKILL
// leaves meta.db-wal; read-write and read-only opens both recover it. A -shm that cannot be used
// ("disk I/O error") is removed by a read-write open (which holds the store lock and keeps its WAL
// index in memory, DESIGN §4); a read-only open leaves it and says exactly what to do.
import test from 'ava';
import { sqliteOnlyTest } from '../../../helpers/pg-meta';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { ROOT_INO } from '../../../../store/meta/meta';
import { metaOpenAdvice } from '../../../../store/meta/sqlite/open';
import { Store } from '../../../../store/store';
import { smallStore } from '../../helpers';

const STORE_JS = path.join(__dirname, '..', '..', '..', '..', 'store', 'store.js');
const FILES = 50;

/** A child process creates FILES files in the store and is killed (SIGKILL) without closing it. */
async function crashedStore(): Promise<string> {
  const { store, dir } = await smallStore('replica:3', 6);
  await store.close();
  const script = `
const { Store } = require(${JSON.stringify(STORE_JS)});
(async () => {
  const s = await Store.open(${JSON.stringify(dir)});
  for (let i = 0; i < ${FILES}; i++) {
    const f = s.ns.create(${ROOT_INO}, 'f' + i, 0o644, 0, 0);
    await s.write(f.ino, 0, Buffer.alloc(1000 + i, i));
  }
  await s.sync();
  process.kill(process.pid, 'SIGKILL');
})();`;
  const r = spawnSync(process.execPath, ['-e', script], { stdio: 'pipe', timeout: 60_000 });
  if (r.signal !== 'SIGKILL') throw new Error(`the writer was not killed: ${r.stderr.toString()}`);
  return dir;
}

async function filesIn(dir: string, readOnly: boolean): Promise<number> {
  const s = await Store.open(dir, { readOnly });
  try {
    let n = 0;
    for (let i = 0; i < FILES; i++) {
      const a = s.ns.lookup(ROOT_INO, `f${i}`);
      if (a !== null && (await s.read(a.ino, 0, a.sizeBytes)).equals(Buffer.alloc(1000 + i, i))) n++;
    }
    return n;
  } finally {
    await s.close();
  }
}

sqliteOnlyTest(
  'a writer killed with -wal left behind: read-only and read-write opens see every committed file',
  async (t) => {
    const dir = await crashedStore();
    t.true(fs.existsSync(path.join(dir, 'meta.db-wal')), 'the crash left the WAL');
    t.is(await filesIn(dir, true), FILES, 'read-only (chunkfs status) reads the WAL');
    t.is(await filesIn(dir, false), FILES, 'read-write (mount, scrub) recovers');
  },
);

sqliteOnlyTest(
  'an unusable -shm: a read-only open says what to do and touches nothing; a read-write open removes it',
  async (t) => {
    const dir = await crashedStore();
    const meta = path.join(dir, 'meta.db');
    fs.rmSync(`${meta}-shm`, { force: true });
    execFileSync('mkfifo', [`${meta}-shm`]); // SQLite cannot map it: SQLITE_IOERR_SHMOPEN, "disk I/O error"
    const err = await t.throwsAsync(Store.open(dir, { readOnly: true }));
    t.regex(err!.message, /cannot open metadata database: disk I\/O error \(SQLITE_IOERR_SHMOPEN\)/);
    t.regex(err!.message, /Open the store read-write once/);
    t.regex(err!.message, /never remove .*meta\.db-wal/);
    t.true(fs.lstatSync(`${meta}-shm`).isFIFO(), 'a read-only open leaves the -shm alone');
    const lines: string[] = [];
    const s = await Store.open(dir, { log: (line) => lines.push(line) });
    t.is(s.ns.readdir(ROOT_INO).length, FILES, 'every committed file is there');
    await s.close();
    t.is(lines.filter((l) => /meta\.db-shm was not a plain file/.test(l)).length, 1, lines.join('\n'));
    t.false(fs.existsSync(`${meta}-shm`) && fs.lstatSync(`${meta}-shm`).isFIFO(), 'the FIFO is gone');
    t.is(await filesIn(dir, true), FILES, 'and read-only opens work again');
  },
);

sqliteOnlyTest('every other open failure names the files and what to do, and never suggests removing the WAL', (t) => {
  const meta = '/srv/store/meta.db';
  const cases: Array<[string, RegExp]> = [
    ['SQLITE_BUSY', /another process holds the metadata database \(fuser -v \/srv\/store\/meta\.db\*\)/],
    ['SQLITE_CANTOPEN', /plain files you may read and write/],
    ['SQLITE_READONLY_DIRECTORY', /mounted read-write/],
    ['SQLITE_CORRUPT', /PRAGMA integrity_check/],
    ['SQLITE_IOERR_SHORT_READ', /dmesg, df -h/],
    ['SQLITE_IOERR_SHMMAP', /even after it was removed/],
  ];
  for (const [code, re] of cases) {
    const advice = metaOpenAdvice(meta, code, false);
    t.regex(advice, re, code);
    t.regex(advice, /never remove \/srv\/store\/meta\.db-wal/, code);
  }
});
