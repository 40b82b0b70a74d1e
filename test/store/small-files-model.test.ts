// Model-based test of many small files (spec §11) against a plain directory: seeded random create,
// overwrite, append, grow past small_file_max, shrink, rename, link, unlink and reopen, with seals
// and compaction in between; after every step each name reads the same bytes from the store and
// from the directory, and at the end everything verifies and nothing leaks.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Store } from '../../store/store';
import { prng, randomBytes, smallStore, tmpDir } from './helpers';

const OPS = 300;
const SMALL_MAX = 8 * 1024;
const NAMES = 40;

function pickSize(random: () => number): number {
  const r = random();
  if (r < 0.85) return Math.floor(random() * SMALL_MAX); // small
  if (r < 0.95) return SMALL_MAX - 2 + Math.floor(random() * 5); // around the threshold
  return SMALL_MAX + Math.floor(random() * 40_000); // grows past it
}

for (const [layout, seed] of [
  ['replica:3', 21],
  ['ec:4+2', 22],
] as const) {
  test(`many small files vs a plain directory: ${layout} seed ${seed}`, async (t) => {
    const created = await smallStore(layout, 6, { smallFileMaxBytes: SMALL_MAX, containerCapacityBytes: 48 * 1024 });
    let store = created.store;
    const plain = tmpDir('chunkfs-plain-');
    const random = prng(seed);
    const name = (): string => `n${Math.floor(random() * NAMES)}`;
    const ino = (n: string): number | null => store.ns.lookup(1, n)?.ino ?? null;
    const unlinkBoth = async (n: string): Promise<void> => {
      const r = store.ns.unlink(1, n);
      if (r.nlink === 0) await store.deleteFile(r.ino);
      fs.unlinkSync(path.join(plain, n));
    };
    for (let op = 0; op < OPS; op++) {
      const n = name();
      const p = path.join(plain, n);
      const i = ino(n);
      const r = random();
      if (i === null) {
        const data = randomBytes(random, pickSize(random));
        const a = store.ns.create(1, n, 0o644, 0, 0);
        await store.write(a.ino, 0, data);
        fs.writeFileSync(p, data);
      } else if (r < 0.25) {
        // overwrite part, maybe extending
        const size = fs.statSync(p).size;
        const off = Math.floor(random() * (size + 10));
        const data = randomBytes(random, 1 + Math.floor(random() * 3000));
        await store.write(i, off, data);
        const fd = fs.openSync(p, 'r+');
        fs.writeSync(fd, data, 0, data.length, off);
        fs.closeSync(fd);
      } else if (r < 0.4) {
        // truncate: shrink or grow, maybe past the threshold
        const size = pickSize(random);
        await store.truncate(i, size);
        fs.truncateSync(p, size);
      } else if (r < 0.5) {
        // rename over whatever is there
        const to = name();
        if (to !== n) {
          const replaced = store.ns.rename(1, n, 1, to);
          if (replaced !== null && replaced.nlink === 0) await store.deleteFile(replaced.ino);
          fs.renameSync(p, path.join(plain, to));
        }
      } else if (r < 0.6) {
        // hard link
        const to = name();
        if (ino(to) === null) {
          store.ns.link(i, 1, to);
          fs.linkSync(p, path.join(plain, to));
        }
      } else if (r < 0.8) {
        await unlinkBoth(n);
      } else if (r < 0.85) {
        await store.compact();
      } else if (r < 0.87) {
        await store.close();
        store = await Store.open(created.dir);
      }
      for (const e of fs.readdirSync(plain)) {
        const want = fs.readFileSync(path.join(plain, e));
        const got = await store.read(ino(e)!, 0, want.length + 100);
        t.true(got.equals(want), `op ${op}: ${e} (${want.length} bytes) reads as in the plain directory`);
        t.is(store.ns.lookup(1, e)!.sizeBytes, want.length, `op ${op}: ${e} size`);
      }
      t.deepEqual(
        store.ns
          .readdir(1)
          .map((e) => e.name)
          .sort(),
        fs.readdirSync(plain).sort(),
        `op ${op}: names`,
      );
    }
    const st = await store.status();
    t.true(st.containers.sealed + st.containers.open + st.containers.full > 0, 'small files were packed');
    await store.compact();
    await store.reclaimNow();
    const scrub = await store.scrub();
    if (process.env.DBG)
      for (const q of [
        'SELECT ino, type, layout, nlink, size FROM inodes WHERE ino = 106',
        'SELECT * FROM containers',
        'SELECT * FROM chunks WHERE ino = 106',
        'SELECT * FROM reclaim',
        'SELECT count(*) FROM inodes WHERE slice_container = 106',
      ])
        t.log(q, store.ns.db.prepare(q).all());
    t.deepEqual(scrub.leaks.paths, []);
    t.is(scrub.badCount, 0);
    await store.close();
  });
}
