// Transaction groups (DESIGN §5), store level: a group's rows are visible at once and committed at
// its close; the dirty-byte bound (a store tunable) closes groups with no sync.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Store } from '../../store/store';
import { SMALL, prng, randomBytes, smallStore, tmpDir } from './helpers';
import { testMetaEngine } from '../helpers/pg-meta';

const CS = SMALL.chunkSizeBytes;

async function pristine(layout: string): Promise<{ dir: string; ino: number; old: Buffer }> {
  const { store, dir } = await smallStore(layout, 6);
  const f = store.ns.create(1, 'f', 0o644, 0, 0);
  const old = randomBytes(prng(5), 2 * CS);
  await store.write(f.ino, 0, old);
  await store.close();
  return { dir, ino: f.ino, old };
}

/** Set the store config's groupDirtyBytesMax (chunkfs.json defaults). */
function setBound(dir: string, value: unknown): void {
  const file = path.join(dir, 'chunkfs.json');
  const config = JSON.parse(fs.readFileSync(file, 'utf8')) as { defaults: Record<string, unknown> };
  config.defaults.groupDirtyBytesMax = value;
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
}

test('a group holds its rows in memory until it closes: reads, size and blocks see them at once, the database after sync', async (t) => {
  const { dir, ino, old } = await pristine('replica:3');
  const s = await Store.open(dir);
  try {
    s.startGroups();
    const tail = randomBytes(prng(13), CS);
    await s.write(ino, 2 * CS, tail);
    t.is(s.ns.getattr(ino)!.sizeBytes, 3 * CS, "getattr shows the group's size before it closes");
    t.true((await s.read(ino, 2 * CS, CS)).equals(tail), "reads see the group's chunk before it closes");
    t.is(s.allocatedBytes(ino), 3 * CS, "st_blocks counts the group's chunk");
    // What another opener (or a restart after a process kill) finds: a copy of the store now.
    // On PostgreSQL a read-only opener of the same database (a copy would take the lease: DESIGN §9).
    const committedSize = async (): Promise<number> => {
      if (testMetaEngine() === 'postgres') {
        const reader = await Store.open(dir, { readOnly: true });
        try {
          return reader.ns.getattr(ino)!.sizeBytes;
        } finally {
          await reader.close();
        }
      }
      const to = path.join(tmpDir('chunkfs-group-'), 'store');
      fs.cpSync(dir, to, { recursive: true, filter: (p) => !p.endsWith('-shm') && !p.endsWith('chunkfs.lock') });
      const copy = await Store.open(to);
      try {
        return copy.ns.getattr(ino)!.sizeBytes;
      } finally {
        await copy.close();
      }
    };
    t.is(await committedSize(), old.length, 'not committed before the group closes (data first)');
    await s.sync();
    t.is(await committedSize(), 3 * CS, 'committed by the close');
  } finally {
    await s.close();
  }
});

test('the dirty-byte bound (groupDirtyBytesMax) closes groups with no sync; a bad bound is refused in one line', async (t) => {
  const { dir, ino } = await pristine('replica:3');
  setBound(dir, 3 * 2 * CS); // two chunks of three replicas
  const s = await Store.open(dir);
  const data = randomBytes(prng(21), 8 * CS);
  try {
    s.startGroups(); // no timer: only the bound closes a group here
    for (let c = 0; c < 8; c++) await s.write(ino, 2 * CS + c * CS, data.subarray(c * CS, (c + 1) * CS));
    t.true((await s.status()).groupsClosed >= 2, 'groups closed at the bound, before any sync');
    await s.sync();
  } finally {
    await s.close();
  }
  const again = await Store.open(dir);
  try {
    t.true((await again.read(ino, 2 * CS, 8 * CS)).equals(data), 'every chunk committed');
  } finally {
    await again.close();
  }
  setBound(dir, -1);
  const err = await t.throwsAsync(Store.open(dir));
  t.regex(err!.message, /groupDirtyBytesMax -1 must be a positive integer/);
  t.false(err!.message.includes('\n'), 'one line');
});
