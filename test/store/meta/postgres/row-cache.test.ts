// The PostgreSQL engine's row cache and pipeline (issue 22: round trips; store/meta/postgres/row-cache.ts,
// store/meta/postgres/pipeline.ts) never serve a stale row: every answer the store gives through store.ns
// (the API the mount uses) is checked against the server's row read on a second connection, after
// each operation of a mixed sequence (write-through patches, evictions, the far-time trigger), after
// a transaction that rolled back (its patches are gone), after the lease is lost (nothing cached is
// trusted, a row another opener changed is read fresh), and when the lease's time runs out
// unrenewed. Statements whose results are not read wait and go together: counted as round trips.
import test from 'ava';
import * as path from 'node:path';
import { Store } from '../../../../store/store';
import { ROOT_INO } from '../../../../store/meta/meta';
import { ATTR_COLUMNS, LAYOUT_XATTR, attrOfValues } from '../../../../store/meta/attr';
import { PgDb } from '../../../../store/meta/postgres/engine';
import { openPgMeta } from '../../../../store/meta/postgres/open';
import { epochSettingSql } from '../../../../store/meta/postgres/fence';
import { CachedResult, PgRowCache, WRITES_FOLLOWED_MAX, planOf } from '../../../../store/meta/postgres/row-cache';
import { PgLease } from '../../../../store/meta/postgres/lease';
import { ChangeAnnouncer } from '../../../../store/meta/postgres/announce';
import { pgTestFile } from '../../../helpers/pg-cluster';
import { SMALL, tmpDir } from '../../helpers';
import { storeUuidOf } from '../../../helpers/pg-meta';

const { pgTest, freshDb } = pgTestFile(test, 'rowcache');

const ATTR_SQL = `SELECT ${ATTR_COLUMNS.join(', ')} FROM inodes WHERE ino = ?`;

/**
 * Round trips the store's timers made on its connection (the lease's renewals, by its timer or
 * before a shard write when the last one is old; the checks for followers every second): counted
 * apart, so an operation's count is its own however long it takes (on a loaded machine a check fell
 * inside a write's await and made it 3, not 2).
 */
let timerTrips = 0;
for (const [proto, method] of [
  [PgLease.prototype, 'renew'],
  [ChangeAnnouncer.prototype, 'check'],
] as const) {
  const timers = proto as unknown as Record<string, (this: { db: PgDb }) => void>;
  const original = timers[method];
  timers[method] = function (this: { db: PgDb }): void {
    const before = this.db.roundTrips;
    try {
      original.call(this);
    } finally {
      timerTrips += this.db.roundTrips - before;
    }
  };
}
/** The round trips of db not made by the store's timers. */
const ownTrips = (db: PgDb): number => db.roundTrips - timerTrips;
const FAR_NS = 10n ** 20n; // past 2262: a far time (store/meta/far-times.ts)

async function openPair(
  opts: { leaseMs?: number; disks?: number } = {},
): Promise<{ store: Store; db: PgDb; other: PgDb; url: string }> {
  const url = freshDb();
  const store = await Store.create(path.join(tmpDir(), 'store'), {
    disks: 1,
    layout: 'replica:1',
    ...SMALL,
    meta: url,
    ...opts,
  });
  const db = (store as unknown as { db: PgDb }).db;
  // A second connection: the server's rows as they are, never through the store's cache.
  return { store, db, other: openPgMeta(url, true, false, storeUuidOf(store.dir)), url };
}

/** The store's operations answered before their replies (DESIGN §9) have run on the server: another connection sees them. */
function replied(store: Store): void {
  (store as unknown as { db: PgDb }).db.readRepliesNow();
}

/** Each name's lookup as the store answers it equals the server's entry. */
function namesAsServer(
  t: import('ava').ExecutionContext,
  store: Store,
  other: PgDb,
  names: Array<[number, string]>,
  what: string,
): void {
  const fresh = other.prepare('SELECT ino FROM dirents WHERE parent = ? AND name = ?');
  replied(store);
  for (const [parent, name] of names) {
    const row = fresh.get(parent, name) as { ino: bigint } | undefined;
    t.is(
      store.ns.lookup(parent, name)?.ino ?? null,
      row === undefined ? null : Number(row.ino),
      `${what}: ${parent}/${name}`,
    );
  }
}

/** Every inode's attributes as the store answers them equal the server's rows. */
function sameAsServer(
  t: import('ava').ExecutionContext,
  store: Store,
  other: PgDb,
  inos: number[],
  what: string,
): void {
  const fresh = other.prepare(ATTR_SQL).raw(true);
  replied(store);
  for (const ino of inos) {
    const row = fresh.get(ino) as Array<bigint | string | null> | undefined;
    t.deepEqual(store.ns.getattr(ino), row === undefined ? null : attrOfValues(row), `${what}: inode ${ino}`);
  }
}

pgTest(
  'every answer equals the server row: creates, chmod, times (far ones and the trigger that clears them), links, renames, unlinks, writes',
  async (t) => {
    const { store, db, other } = await openPair();
    try {
      const dir = store.ns.mkdir(ROOT_INO, 'd', 0o755, 0, 0).ino;
      const inos = [ROOT_INO, dir];
      for (let i = 0; i < 6; i++)
        inos.push(store.ns.create(i % 2 === 0 ? ROOT_INO : dir, `f${i}`, 0o644, 1000, 1000).ino);
      sameAsServer(t, store, other, inos, 'after creates');
      t.true(db.rowCache.size > 0, 'rows are cached while the lease is held');
      store.ns.setattr(inos[2], { mode: 0o600, uid: 7 });
      store.ns.setattr(inos[3], { mtimeNs: FAR_NS, atimeNs: -FAR_NS });
      sameAsServer(t, store, other, inos, 'after setattr');
      // A write stamps mtime and ctime without their *_far columns: the server's trigger clears mtime_far.
      await store.write(inos[3], 0, Buffer.from('abc'));
      sameAsServer(t, store, other, inos, 'after a write that clears a far time');
      t.not(store.ns.getattr(inos[3])!.mtimeNs, FAR_NS, 'the far mtime is gone, as on the server');
      store.ns.link(inos[4], dir, 'hard');
      store.ns.rename(ROOT_INO, 'f0', dir, 'moved');
      store.ns.rename(dir, 'f1', ROOT_INO, 'f4'); // replaces f4: its nlink drops
      store.ns.unlink(dir, 'hard');
      store.ns.setxattr(inos[5], 'user.x', Buffer.from('y'));
      sameAsServer(t, store, other, inos, 'after links, renames, unlinks, xattrs');
      t.true(db.rowCache.hits > 0, 'the cache answered some reads');
    } finally {
      other.close();
      await store.close();
    }
  },
);

pgTest('a transaction that rolls back leaves no patched row behind', async (t) => {
  const { store, db, other } = await openPair();
  try {
    const ino = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0).ino;
    store.ns.getattr(ino); // cached
    t.throws(
      () =>
        db.transaction(() => {
          store.ns.setattr(ino, { mode: 0o600 }); // patches the cached row, queued on the server
          t.is(store.ns.getattr(ino)!.mode & 0o7777, 0o600, 'the transaction sees its own change');
          throw new Error('rolled back');
        })(),
      { message: 'rolled back' },
    );
    t.is(store.ns.getattr(ino)!.mode & 0o7777, 0o644, 'after the rollback: the old mode');
    sameAsServer(t, store, other, [ROOT_INO, ino], 'after the rollback');
    // A statement that fails on the server (a duplicate entry) fails its operation and leaves nothing cached from it.
    t.throws(
      () =>
        db.transaction(() => {
          store.ns.setattr(ino, { mode: 0o640 });
          db.prepare('INSERT INTO dirents(parent, name, ino) VALUES (?, ?, ?)').run(ROOT_INO, 'f', ino);
          store.ns.readdir(ROOT_INO); // a read: sends what waits, and meets the failure
        })(),
      { message: /duplicate key|unique/ },
    );
    sameAsServer(t, store, other, [ROOT_INO, ino], 'after a failed statement');
    t.is(store.ns.getattr(ino)!.mode & 0o7777, 0o644);
  } finally {
    other.close();
    await store.close();
  }
});

/** Polls of the lost-lease test at most (its lease renews every LEASE_MS / 3). */
const POLLS_MAX = 200;
const POLL_MS = 50;
const SHORT_LEASE_MS = 1500;

/** Another opener takes the lease (as after expiry), with a new epoch its session writes under (postgres/fence.ts). */
function takeLease(writer: PgDb): void {
  writer.transaction(() => {
    writer.exec('LOCK TABLE chunkfs_lease IN EXCLUSIVE MODE');
    const r = writer
      .prepare(
        "UPDATE chunkfs_lease SET holder = 'other:1:x', epoch = nextval('chunkfs_lease_epoch') WHERE k = 0 RETURNING epoch",
      )
      .get() as { epoch: bigint };
    writer.exec(epochSettingSql(r.epoch));
  })();
}

pgTest('lost lease: nothing cached is trusted; a row another opener changed is read fresh', async (t) => {
  const { store, db, other, url } = await openPair({ leaseMs: SHORT_LEASE_MS });
  const writer = openPgMeta(url, false, false, storeUuidOf(store.dir));
  try {
    const ino = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0).ino;
    store.ns.getattr(ino);
    t.true(db.rowCache.size > 0);
    // Another opener takes the lease (as after expiry) and changes the row.
    takeLease(writer);
    writer.prepare('UPDATE inodes SET mode = ? WHERE ino = ?').run(0o100600, ino);
    // The next heartbeat (every SHORT_LEASE_MS / 3) finds the lease taken and drops the cache.
    for (let i = 0; i < POLLS_MAX && db.rowCache.trusted; i++) await new Promise((r) => setTimeout(r, POLL_MS));
    t.false(db.rowCache.trusted, 'not trusted');
    t.is(db.rowCache.size, 0, 'dropped');
    t.is(store.ns.getattr(ino)!.mode & 0o7777, 0o600, 'read fresh from the server');
    store.ns.getattr(ino);
    t.is(db.rowCache.size, 0, 'and nothing cached again without the lease');
    sameAsServer(t, store, other, [ROOT_INO, ino], 'after the lease was lost');
    writer.prepare("UPDATE chunkfs_lease SET holder = 'x' WHERE k = 0").run(); // let close release nothing of the other's
  } finally {
    writer.close();
    other.close();
    await store.close();
  }
});

pgTest(
  'round trips (the engine counts them): a create, mkdir, rename, unlink and rmdir each take one, their reads answered from the cache, writes sent with COMMIT',
  async (t) => {
    const { store, db, other } = await openPair();
    try {
      const count = (fn: () => void): number => {
        const before = db.roundTrips;
        fn();
        return db.roundTrips - before;
      };
      store.ns.create(ROOT_INO, 'warm', 0o644, 0, 0); // statements prepared once, the root read whole, the inode numbers read
      store.ns.rename(ROOT_INO, 'warm', ROOT_INO, 'warm2');
      store.ns.unlink(ROOT_INO, 'warm2');
      const d = store.ns.mkdir(ROOT_INO, 'warmdir', 0o755, 0, 0).ino;
      store.ns.create(d, 'warm', 0o644, 0, 0);
      store.ns.getattr(d);
      let ino = 0;
      t.is(
        count(() => {
          ino = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0).ino;
        }),
        1,
        'create: its statements and COMMIT in one round trip',
      );
      t.is(
        count(() => store.ns.lookup(ROOT_INO, 'f')),
        0,
        'the lookup after a create: from the cache',
      );
      t.is(
        count(() => store.ns.getattr(ino)),
        0,
        'getattr after a create: from the cache',
      );
      t.is(
        count(() => store.ns.lookup(ROOT_INO, 'nothing')),
        0,
        'a name the directory does not hold: from the cache',
      );
      t.is(
        count(() => store.ns.setattr(ino, { mode: 0o600 })),
        1,
        'chmod: BEGIN, UPDATE and COMMIT in one round trip',
      );
      t.is(
        count(() => store.ns.create(ROOT_INO, 'g', 0o644, 0, 0)),
        1,
        'create',
      );
      t.is(
        count(() => store.ns.rename(ROOT_INO, 'g', ROOT_INO, 'h')),
        1,
        'rename to a new name',
      );
      t.is(
        count(() => store.ns.rename(ROOT_INO, 'f', ROOT_INO, 'h')),
        1,
        "rename over a name: the replaced inode's columns projected from its whole row (read with its create)",
      );
      t.is(
        count(() => store.ns.unlink(ROOT_INO, 'h')),
        1,
        'unlink',
      );
      t.is(
        count(() => store.ns.create(d, 'x', 0o644, 0, 0)),
        1,
        'create in a directory made here',
      );
      t.is(
        count(() => store.ns.mkdir(d, 'sub', 0o755, 0, 0)),
        1,
        'mkdir',
      );
      const sub = store.ns.lookup(d, 'sub')!.ino;
      t.is(
        count(() => store.ns.create(sub, 'y', 0o644, 0, 0)),
        1,
        "create in the directory just made: its inherited layout is its parent's, known",
      );
      store.ns.unlink(sub, 'y');
      t.is(
        count(() => store.ns.rmdir(d, 'sub')),
        1,
        'rmdir of a directory known empty: nothing asked before its COMMIT',
      );
      // The create of x was answered before its reply (DESIGN §9 "PostgreSQL round trips"): the row it
      // prefetched came after later writes, kept with them replayed on it, so the rename reads nothing.
      t.is(
        count(() => store.ns.rename(d, 'x', ROOT_INO, 'x')),
        1,
        'rename across directories',
      );
      t.is(
        count(() => store.ns.unlink(ROOT_INO, 'x')),
        1,
        'unlink',
      );
      sameAsServer(t, store, other, [ROOT_INO, d, ino], 'after them');
      namesAsServer(
        t,
        store,
        other,
        [
          [ROOT_INO, 'f'],
          [ROOT_INO, 'g'],
          [ROOT_INO, 'h'],
          [ROOT_INO, 'x'],
          [d, 'x'],
          [d, 'sub'],
          [d, 'warm'],
        ],
        'after them',
      );
    } finally {
      other.close();
      await store.close();
    }
  },
);

pgTest(
  'lost lease: names and the inherited layout are asked of the server again, as another opener left them; nothing is created',
  async (t) => {
    const { store, db, other, url } = await openPair({ leaseMs: SHORT_LEASE_MS, disks: 2 });
    const writer = openPgMeta(url, false, false, storeUuidOf(store.dir));
    try {
      const d = store.ns.mkdir(ROOT_INO, 'd', 0o755, 0, 0).ino;
      const f = store.ns.create(d, 'f', 0o644, 0, 0).ino;
      t.is(store.ns.lookup(d, 'x'), null, 'absent, known from the cache');
      t.true(db.rowCache.names.size > 0);
      // Another opener takes the lease (as after expiry): a new inode named x in d, a layout on d.
      takeLease(writer);
      const taken = writer.prepare('SELECT max(ino) + 1 AS n FROM inodes').get() as { n: bigint };
      writer
        .prepare(
          `INSERT INTO inodes(ino, type, mode, uid, gid, size, nlink, atime_ns, mtime_ns, ctime_ns, birth_ns)
      VALUES (?, 'file', ?, 0, 0, 0, 1, 0, 0, 0, 0)`,
        )
        .run(taken.n, 0o100644);
      writer.prepare('INSERT INTO dirents(parent, name, ino) VALUES (?, ?, ?)').run(d, 'x', taken.n);
      writer
        .prepare('INSERT INTO xattrs(ino, name, value) VALUES (?, ?, ?)')
        .run(d, LAYOUT_XATTR, Buffer.from('replica:2'));
      writer.prepare('DELETE FROM dirents WHERE parent = ? AND name = ?').run(d, 'f');
      for (let i = 0; i < POLLS_MAX && db.rowCache.trusted; i++) await new Promise((r) => setTimeout(r, POLL_MS));
      t.false(db.rowCache.trusted, 'not trusted');
      t.is(db.rowCache.names.size, 0, 'names dropped');
      t.is(store.ns.lookup(d, 'x')?.ino, Number(taken.n), "the other opener's name is seen");
      t.is(store.ns.lookup(d, 'f'), null, 'and the name it removed is gone');
      t.is(store.ns.inheritedLayout(d), 'replica:2', 'the layout the other opener set is inherited');
      t.throws(
        () => store.ns.create(d, 'y', 0o644, 0, 0),
        { code: 'EROFS' },
        'and it changes nothing more (DESIGN §9 "Lease and fencing")',
      );
      t.true(f > 0);
      sameAsServer(t, store, other, [ROOT_INO, d, Number(taken.n)], 'after the lease was lost');
      namesAsServer(
        t,
        store,
        other,
        [
          [d, 'x'],
          [d, 'y'],
          [d, 'f'],
        ],
        'after the lease was lost',
      );
      writer.prepare("UPDATE chunkfs_lease SET holder = 'x' WHERE k = 0").run(); // let close release nothing of the other's
    } finally {
      writer.close();
      other.close();
      await store.close();
    }
  },
);

pgTest(
  "a create's row that comes after a chmod, touch: kept with them replayed; getattr asks nothing, equals the server",
  async (t) => {
    const { store, db, other } = await openPair();
    const replies = (db as unknown as { replies: { readArrived: () => void } }).replies;
    try {
      const count = (fn: () => void): number => {
        const before = ownTrips(db);
        fn();
        return ownTrips(db) - before;
      };
      const warm = store.ns.create(ROOT_INO, 'warm', 0o644, 0, 0).ino; // statements prepared, inode numbers read
      store.ns.setattr(warm, { mode: 0o600, atimeNs: 5n, mtimeNs: 6n });
      store.ns.getattr(warm);
      // The server's replies come late (as on a loaded machine): nothing is read before it must be.
      replies.readArrived = () => {};
      const inos = [0, 1].map((i) => store.ns.create(ROOT_INO, `late${i}`, 0o644, 1000, 1000).ino);
      const trips = count(() => {
        store.ns.setattr(inos[0], { mode: 0o600 }); // chmod
        store.ns.setattr(inos[1], { atimeNs: 7n, mtimeNs: 8n }); // touch
      });
      t.is(trips, 2, "chmod and touch: one round trip each, answered before the creates' replies were read");
      t.true(db.unanswered > 0, 'the creates were not read before them');
      delete (replies as { readArrived?: unknown }).readArrived;
      t.is(
        count(() => inos.forEach((ino) => store.ns.getattr(ino))),
        0,
        'getattr: the late rows kept, with the chmod and touch replayed on them',
      );
      sameAsServer(t, store, other, [ROOT_INO, ...inos], 'the rows kept');
    } finally {
      delete (replies as { readArrived?: unknown }).readArrived;
      other.close();
      await store.close();
    }
  },
);

test('the cache ends with the lease time it was given: unrenewed, nothing is served', (t) => {
  let now = 1000;
  const cache = new PgRowCache({ inodes: { uniqueKeys: [['ino']] } }, () => now);
  const text = 'SELECT ino, mode FROM inodes WHERE ino = $1';
  const row = new CachedResult(['ino', 'mode'], [20, 20], [['5', '420']], '1');
  cache.put(text, ['5'], row);
  t.is(cache.get(text, ['5']), undefined, 'nothing is kept before the lease is held');
  cache.trustUntil(2000);
  cache.put(text, ['5'], row);
  t.is(cache.get(text, ['5'])?.getvalue(0, 1), '420');
  cache.write('UPDATE inodes SET mode = $1 WHERE ino = $2', ['384', '5']);
  t.is(cache.get(text, ['5'])?.getvalue(0, 1), '384', 'written through');
  const counted = 'SELECT ino, nlink FROM inodes WHERE ino = $1';
  cache.put(counted, ['5'], new CachedResult(['ino', 'nlink'], [20, 20], [['5', '2']], '1'));
  cache.write('UPDATE inodes SET nlink = nlink + $1 WHERE ino = $2', ['-1', '5']);
  t.is(cache.get(counted, ['5'])?.getvalue(0, 1), '1', 'an addition to the column itself: written through');
  t.is(
    cache.get('SELECT nlink FROM inodes WHERE ino = $1', ['5'])?.getvalue(0, 0),
    '1',
    'columns another result of the row holds: projected',
  );
  cache.write('UPDATE inodes SET mode = GREATEST(mode, $1) WHERE ino = $2', ['1', '5']);
  t.is(cache.get(text, ['5'])?.getvalue(0, 1), '384', 'GREATEST with a smaller value: written through, unchanged');
  cache.write('UPDATE inodes SET mode = GREATEST(mode, $1) WHERE ino = $2', ['500', '5']);
  t.is(cache.get(text, ['5'])?.getvalue(0, 1), '500', 'GREATEST with a larger value: written through');
  cache.write('UPDATE inodes SET mode = LEAST(mode, $1) WHERE ino = $2', ['1', '5']);
  t.is(cache.get(text, ['5']), undefined, 'an expression: dropped');
  cache.put(text, ['5'], row);
  cache.write('UPDATE inodes SET mode = $1 WHERE slice_container = $2', ['1', '9']);
  t.is(cache.get(text, ['5']), undefined, 'another key: whatever it may touch is dropped');
  cache.put(text, ['5'], row);
  cache.write('DELETE FROM inodes WHERE ino = $1', ['6']);
  t.truthy(cache.get(text, ['5']), 'another row of the same key: kept');
  cache.write('VACUUM', []);
  t.is(cache.size, 0, 'a statement it cannot read drops everything');
  cache.put(text, ['5'], row);
  now = 2000;
  t.is(cache.get(text, ['5']), undefined, 'the lease time is over');
  t.is(cache.size, 0);
});

test('a read answered after later writes is kept with them replayed in order, or dropped when one cannot be', (t) => {
  const cache = new PgRowCache({ inodes: { uniqueKeys: [['ino']] } }, () => 0);
  cache.trustUntil(1);
  const text = 'SELECT ino, mode, nlink FROM inodes WHERE ino = $1';
  const late = (): CachedResult => new CachedResult(['ino', 'mode', 'nlink'], [20, 20, 20], [['5', '420', '1']], '1');
  const setMode = 'UPDATE inodes SET mode = $1 WHERE ino = $2';
  let at = cache.mark();
  cache.write(setMode, ['384', '5']);
  cache.write('UPDATE inodes SET nlink = nlink + $1 WHERE ino = $2', ['1', '5']);
  cache.write(setMode, ['256', '6']); // another inode
  cache.write('INSERT INTO inodes(ino, mode) VALUES ($1, $2)', ['7', '420']); // another row: this one still has its own
  cache.write('INSERT INTO chunks(ino, idx) VALUES ($1, $2)', ['5', '0']); // a table not cached
  cache.putAfter(text, ['5'], late(), at);
  t.deepEqual(
    (cache.get(text, ['5']) as CachedResult | undefined)?.values,
    [['5', '384', '2']],
    'the later writes replayed on the late row, in order',
  );
  const drops: Array<[string, () => void]> = [
    ['an expression', () => cache.write('UPDATE inodes SET mode = LEAST(mode, $1) WHERE ino = $2', ['1', '5'])],
    ['a delete of the row', () => cache.write('DELETE FROM inodes WHERE ino = $1', ['5'])],
    ['a statement it cannot read', () => cache.write('VACUUM', [])],
    ['everything dropped (a rollback)', () => cache.clear()],
    ['a write of another key', () => cache.write(setMode.replace('ino = $2', 'slice_container = $2'), ['1', '9'])],
    [
      'more writes than it remembers',
      () => {
        for (let i = 0; i <= 2 * WRITES_FOLLOWED_MAX; i++) cache.write(setMode, [String(i), '6']);
      },
    ],
  ];
  for (const [what, write] of drops) {
    cache.clear();
    at = cache.mark();
    cache.write(setMode, ['384', '5']);
    write();
    cache.putAfter(text, ['5'], late(), at);
    t.is(cache.get(text, ['5']), undefined, `not kept after ${what}`);
  }
  cache.clear();
  at = cache.mark();
  for (let i = 0; i < WRITES_FOLLOWED_MAX; i++) cache.write(setMode, [String(i), '6']);
  cache.putAfter(text, ['5'], late(), at);
  t.is(cache.get(text, ['5'])?.getvalue(0, 1), '420', 'as many writes as it remembers: kept');
});

test('an INSERT of a unique key forgets the answers that found no row, and only those (kept apart: no scan of the cache)', (t) => {
  const cache = new PgRowCache({ inodes: { uniqueKeys: [['ino']] } }, () => 0);
  cache.trustUntil(1);
  const text = 'SELECT ino, mode FROM inodes WHERE ino = $1';
  const none = new CachedResult(['ino', 'mode'], [20, 20], [], '0');
  for (let ino = 1; ino <= 50; ino++)
    cache.put(text, [String(ino)], new CachedResult(['ino', 'mode'], [20, 20], [[String(ino), '420']], '1'));
  cache.put(text, ['60'], none);
  cache.put(text, ['61'], none);
  t.is(cache.get(text, ['60'])?.ntuples(), 0, 'an answer without a row is kept');
  cache.write('INSERT INTO inodes(ino, mode) VALUES ($1, $2)', ['61', '420']);
  t.is(cache.get(text, ['61']), undefined, 'the inserted key: asked again');
  t.is(cache.get(text, ['60']), undefined, 'every answer without a row: asked again (the INSERT may give it one)');
  t.is(cache.get(text, ['7'])?.getvalue(0, 1), '420', 'answers that found their row: kept');
  t.is(cache.size, 50);
  cache.put(text, ['62'], none);
  cache.write('UPDATE inodes SET mode = $1 WHERE ino = $2', ['384', '62']);
  cache.write('DELETE FROM inodes WHERE ino = $1', ['62']);
  cache.put(text, ['62'], none);
  cache.write('INSERT INTO inodes(ino, mode) VALUES ($1, $2)', ['62', '420']);
  t.is(cache.get(text, ['62']), undefined, 'one kept again after it was forgotten: forgotten by the next INSERT');
  t.is(cache.size, 50);
});

test('which statements are cached reads, and which writes are patches', (t) => {
  t.like(planOf('SELECT ino, mode FROM inodes WHERE ino = $1'), {
    kind: 'read',
    table: 'inodes',
    keys: ['ino'],
    plainColumns: true,
  });
  t.like(planOf('SELECT size AS n FROM inodes WHERE ino = $1'), { kind: 'read', plainColumns: false });
  // A name's lookup is the namespace's operations' to keep (postgres/namespace-ops.ts), not read from its text.
  t.like(planOf('SELECT i.* FROM dirents d JOIN inodes i ON i.ino = d.ino WHERE d.parent = $1 AND d.name = $2'), {
    kind: 'other',
    writes: false,
  });
  t.like(planOf('SELECT d.name FROM dirents d JOIN inodes i ON i.ino = d.ino WHERE d.parent = $1 AND d.name = $2'), {
    kind: 'other',
    writes: false,
  });
  t.like(planOf('UPDATE inodes SET nlink = nlink + $1, ctime_ns = $2 WHERE ino = $3'), {
    kind: 'write',
    set: [
      { col: 'nlink', param: 0, add: true },
      { col: 'ctime_ns', param: 1, add: false },
    ],
  });
  t.like(planOf('UPDATE inodes SET nlink = mode + $1 WHERE ino = $2'), { kind: 'write', set: null });
  t.like(planOf('SELECT now() FROM inodes WHERE ino = $1'), { kind: 'other', writes: false });
  t.like(planOf('WITH x AS (SELECT 1) UPDATE inodes SET mode = 0'), { kind: 'other', writes: true });
  t.like(planOf('BEGIN'), { kind: 'other', writes: false });
  t.like(planOf('UPDATE inodes SET mode = $1, uid = $2 WHERE ino = $3'), {
    kind: 'write',
    table: 'inodes',
    where: ['ino'],
    set: [
      { col: 'mode', param: 0 },
      { col: 'uid', param: 1 },
    ],
  });
  t.like(planOf('UPDATE inodes SET size = GREATEST(size, $1), mtime_ns = $2 WHERE ino = $3 RETURNING size'), {
    kind: 'write',
    set: [
      { col: 'size', param: 0, max: true },
      { col: 'mtime_ns', param: 1 },
    ],
    setCols: ['size', 'mtime_ns'],
  });
  t.like(planOf('UPDATE inodes SET size = GREATEST(mode, $1) WHERE ino = $2'), {
    kind: 'write',
    set: null,
    setCols: ['size'],
  });
  // Reads of one inode's rows with other conditions: answered empty for a new inode only.
  t.like(planOf('SELECT * FROM chunks WHERE ino = $1 AND version > 0 AND chunk_index >= $2 ORDER BY chunk_index'), {
    kind: 'ofInode',
    table: 'chunks',
    param: 0,
  });
  t.like(planOf('SELECT * FROM chunks WHERE ino = $1 AND version > 0 OR chunk_index = $2'), {
    kind: 'other',
    writes: false,
  });
  t.like(planOf('SELECT count(*) AS n FROM chunks WHERE ino = $1 AND version > 0'), { kind: 'other', writes: false });
  // A write it cannot key whole, but whose rows are all one inode's.
  t.like(planOf('UPDATE chunks SET version = $1 WHERE ino = $2 AND chunk_index = $3 AND max_version >= $4'), {
    kind: 'write',
    table: 'chunks',
    where: null,
    inoParam: 1,
  });
  t.like(planOf('UPDATE chunks SET version = $1 WHERE ino = $2 OR chunk_index = $3'), {
    kind: 'write',
    table: 'chunks',
    where: null,
    inoParam: undefined,
  });
  t.like(planOf('INSERT INTO kv(k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v'), {
    kind: 'write',
    insert: true,
    upsert: true,
  });
});

test('a new inode has no chunks until this connection writes some of them; a write of chunks it cannot tie to an inode forgets every new inode', (t) => {
  const cache = new PgRowCache({ inodes: { uniqueKeys: [['ino']] } }, () => 0);
  cache.trustUntil(1);
  const live = 'SELECT * FROM chunks WHERE ino = $1 AND version > 0 AND chunk_index >= $2 ORDER BY chunk_index';
  const one = 'SELECT * FROM chunks WHERE ino = $1 AND chunk_index = $2';
  t.is(cache.get(live, ['7', '0']), undefined, 'an inode not made here: asked');
  cache.newInode('7');
  cache.newInode('8');
  t.is(cache.get(live, ['7', '0'])?.ntuples(), 0, 'a new inode: no chunks, without asking');
  t.is(cache.get(one, ['7', '3'])?.ntuples(), 0, 'nor one chunk of it');
  cache.write(
    'UPDATE chunks SET version = $1, logical_len = $2 WHERE ino = $3 AND chunk_index = $4 AND max_version >= $5',
    ['1', '9', '7', '0', '1'],
  );
  t.is(cache.get(live, ['7', '0']), undefined, 'chunks of it written: asked');
  t.is(cache.get(live, ['8', '0'])?.ntuples(), 0, 'another new inode: still known');
  cache.write('INSERT INTO chunks(ino, chunk_index, version, logical_len, max_version) VALUES ($1, $2, 0, 0, 1)', [
    '8',
    '0',
  ]);
  t.is(cache.get(one, ['8', '0']), undefined, 'a chunk inserted: asked');
  cache.newInode('9');
  cache.write('DELETE FROM chunks WHERE version = $1', ['0']);
  t.is(cache.get(live, ['9', '0']), undefined, 'a write not tied to one inode: every new inode forgotten');
});

test("names and layouts are kept by the operations and dropped with the rows; a lookup's row is kept as its inode's read", (t) => {
  const cache = new PgRowCache({ inodes: { uniqueKeys: [['ino']] } }, () => 0);
  cache.trustUntil(1);
  cache.keepInodeRow(new CachedResult(['ino', 'mode'], [20, 20], [['5', '420']], '1'));
  t.is(cache.get('SELECT mode FROM inodes WHERE ino = $1', ['5'])?.getvalue(0, 0), '420', 'its inode row, projected');
  cache.names.set('1', 'b', '5');
  t.is(cache.names.get('1', 'b'), '5');
  t.true(cache.names.wantsListing('1'), 'a directory not known whole is worth reading whole');
  t.is(cache.names.hasEntries('1'), undefined, 'not known whole: whether it is empty is asked');
  const listing = new CachedResult(['name', 'ino'], [25, 20], [['b', '5']], '1');
  const w = cache.writes;
  cache.write('UPDATE inodes SET mode = $1 WHERE ino = $2', ['1', '7']);
  cache.listed('1', listing, w);
  t.true(cache.names.wantsListing('1'), 'a listing older than a write is not kept');
  cache.listed('1', listing, cache.writes);
  t.false(cache.names.wantsListing('1'), 'read whole');
  t.is(cache.names.get('1', 'zz'), null, 'any other name of a directory read whole: absent');
  t.true(cache.names.hasEntries('1'));
  cache.names.set('1', 'b', null);
  t.false(cache.names.hasEntries('1'), 'its one entry removed: known empty');
  cache.keepLayout(9, 'replica:1');
  t.is(cache.layouts.get(9), 'replica:1');
  cache.write('DELETE FROM dirents WHERE ino = $1', ['6']);
  t.is(cache.layouts.get(9), 'replica:1', 'writes are not read for names or layouts: the operations keep them');
  cache.write('TRUNCATE dirents', []);
  t.is(cache.names.size, 0, 'a write it cannot follow drops everything, names too');
  t.is(cache.layouts.size, 0, 'and layouts');
  cache.trustUntil(0);
  cache.keepLayout(9, null);
  t.is(cache.layouts.size, 0, 'nothing is kept while rows are not trusted');
});

pgTest(
  'round trips of a small file (issue 22): the write of a new file reads nothing, a read after it asks nothing, deletions share one transaction',
  async (t) => {
    const { store, db, other } = await openPair();
    try {
      const count = async (fn: () => unknown): Promise<number> => {
        const before = ownTrips(db);
        await fn();
        return ownTrips(db) - before;
      };
      const payload = Buffer.alloc(100, 0x6d);
      // Warm: statements prepared, the open container made, the root read whole.
      const warm = store.ns.create(ROOT_INO, 'warm', 0o644, 0, 0).ino;
      await store.write(warm, 0, payload);
      await store.read(warm, 0, 200);
      store.ns.unlink(ROOT_INO, 'warm');
      await store.deleteFile(warm);
      const inos: number[] = [];
      for (let i = 0; i < 10; i++) inos.push(store.ns.create(ROOT_INO, `f${i}`, 0o644, 0, 0).ino);
      const trips: number[] = [];
      for (const ino of inos) trips.push(await count(() => store.write(ino, 0, payload)));
      // The open container's row, then the container's intent, the needle's slice and the file's size in one pipeline
      // with COMMIT; no read of the file's row or of its chunks (a new inode has none), no BEGIN/COMMIT of a read-only transaction.
      // Each commit answered before its reply (DESIGN §9 "PostgreSQL round trips"): the next write's
      // read of the open container may wait for it: one more trip than when each commit waited, at most.
      t.true(
        trips.every((n) => n === 2 || n === 3),
        `a new file's 100-byte write: the open container read, then one commit: ${trips.join(' ')}`,
      );
      t.is(
        await count(() => {
          for (const ino of inos) store.ns.getattr(ino);
        }),
        0,
        'attributes after the writes (GREATEST patched into the cached row)',
      );
      t.is(
        await count(async () => {
          for (const ino of inos) t.deepEqual(await store.read(ino, 0, 200), payload);
        }),
        0,
        'reads: the file rows projected from the whole row',
      );
      sameAsServer(t, store, other, [ROOT_INO, ...inos], 'after writes and reads');
      for (let i = 0; i < inos.length; i++) store.ns.unlink(ROOT_INO, `f${i}`);
      // One batch: the ten are queued in one tick, before its DELETE_BATCH_MS timer can run, so they
      // share one transaction however late the timer fires (a loaded machine's extra count was a timer's).
      const deletions = await count(() => Promise.all(inos.map((ino) => store.deleteFile(ino))));
      t.is(deletions, 1, 'ten deletions in one transaction; the chunks of new inodes not asked for');
      const rowsOf = other.prepare('SELECT count(*) AS n FROM inodes WHERE ino = ?');
      replied(store);
      for (const ino of inos) t.is((rowsOf.get(ino) as { n: bigint }).n, 0n, `inode ${ino} gone on the server`);
      const dead = other.prepare('SELECT sum(dead_bytes) AS d FROM containers').get() as { d: bigint };
      t.true(dead.d > 0n, 'the needles turned dead');
    } finally {
      other.close();
      await store.close();
    }
  },
);
