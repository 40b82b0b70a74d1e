// The PostgreSQL engine's row cache (store/meta/postgres/row-cache.ts), kept by operation, and its
// pipeline (pipeline.ts) never serve a stale row: every answer the store gives through store.ns and
// the data path (the APIs the mount uses) is checked against the server's row read on a second
// connection, after each operation of a mixed sequence (patches, the far-time trigger), after a
// transaction that rolled back (its patches are gone), after the lease is lost (nothing cached is
// trusted, a row another opener changed is read fresh), and when the lease's time runs out
// unrenewed. Every row the cache keeps is compared whole with the server's after each operation; a
// write of a kept table that no operation follows is refused. Round trips are counted.
import test from 'ava';
import * as path from 'node:path';
import { Store } from '../../../../store/store';
import { ROOT_INO } from '../../../../store/meta/meta';
import { ATTR_COLUMNS, LAYOUT_XATTR, attrOfValues } from '../../../../store/meta/attr';
import { PgDb } from '../../../../store/meta/postgres/engine';
import { openPgMeta } from '../../../../store/meta/postgres/open';
import { epochSettingSql } from '../../../../store/meta/postgres/fence';
import { CachedResult, PgRowCache, WRITES_FOLLOWED_MAX } from '../../../../store/meta/postgres/row-cache';
import { changing } from '../../../../store/meta/postgres/inode-change';
import { rowValues } from '../../../../store/meta/postgres/decode';
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
          const dup = db.prepare('INSERT INTO dirents(parent, name, ino) VALUES (?, ?, ?)');
          db.following(() => dup.run(ROOT_INO, 'f', ino)); // as an operation would (the refusal of others: below)
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

pgTest(
  "st_blocks of a file with bytes asks nothing: its live chunks' lengths kept from its create (or one read), not behind unread replies",
  async (t) => {
    const { store, db, other } = await openPair();
    const replies = (db as unknown as { replies: { readArrived: () => void } }).replies;
    const count = (fn: () => void): number => {
      const before = ownTrips(db);
      fn();
      return ownTrips(db) - before;
    };
    const serverBytes = (ino: number): number => {
      replied(store);
      const r = other.prepare('SELECT coalesce(sum(logical_len), 0) AS n FROM chunks WHERE ino = ? AND version > 0');
      return Number((r.get(ino) as { n: bigint }).n);
    };
    try {
      const big = store.ns.create(ROOT_INO, 'big', 0o644, 0, 0).ino;
      await store.write(big, 0, Buffer.alloc(300_000, 1));
      store.ns.getattr(big);
      let bytes = 0;
      t.is(
        count(() => (bytes = store.allocatedBytes(big))),
        0,
        'kept since its create',
      );
      t.is(bytes, serverBytes(big));
      db.rowCache.clear();
      store.ns.getattr(big);
      t.is(
        count(() => store.allocatedBytes(big)),
        1,
        'dropped: read once',
      );
      // The server's replies come late: a create is answered, its reply unread.
      replies.readArrived = () => {};
      store.ns.create(ROOT_INO, 'later', 0o644, 0, 0);
      t.true(db.unanswered > 0, 'a create answered, its reply unread');
      t.is(
        count(() => (bytes = store.allocatedBytes(big))),
        0,
        'kept after one read: no read waits behind the reply',
      );
      t.true(db.unanswered > 0, 'the reply still unread: nothing waited for it');
      delete (replies as { readArrived?: unknown }).readArrived;
      t.is(bytes, serverBytes(big));
      t.is(bytes, 300_000);
    } finally {
      delete (replies as { readArrived?: unknown }).readArrived;
      other.close();
      await store.close();
    }
  },
);

/** Every row the store's cache keeps equals the server's, read whole on the other connection. */
function keptAsServer(t: import('ava').ExecutionContext, store: Store, db: PgDb, other: PgDb, what: string): number {
  replied(store);
  const whole = other.prepare('SELECT * FROM inodes WHERE ino = ?').raw(true);
  const xattr = other.prepare('SELECT value FROM xattrs WHERE ino = ? AND name = ?');
  const anyXattr = other.prepare('SELECT 1 FROM xattrs WHERE ino = ? LIMIT 1');
  const anyChunk = other.prepare('SELECT 1 FROM chunks WHERE ino = ? LIMIT 1');
  let n = 0;
  for (const [ino, kept] of db.rowCache.keptInodes()) {
    const server = whole.get(ino) as unknown[] | undefined;
    const mine = kept === null ? undefined : rowValues(kept, kept.names);
    t.deepEqual(mine, server, `${what}: the row of inode ${ino} as kept`);
    n++;
  }
  const { values, none } = db.rowCache.keptXattrs();
  for (const [ino, name, value] of values) {
    const server = xattr.get(ino, name) as { value: Buffer } | undefined;
    t.deepEqual(value, server?.value ?? null, `${what}: xattr ${name} of inode ${ino} as kept`);
    n++;
  }
  for (const ino of none) {
    t.is(anyXattr.get(ino), undefined, `${what}: inode ${ino} kept as new has no xattrs`);
    t.is(anyChunk.get(ino), undefined, `${what}: inode ${ino} kept as new has no chunks`);
  }
  const live = other.prepare('SELECT chunk_index, logical_len FROM chunks WHERE ino = ? AND version > 0 ORDER BY 1');
  for (const [ino, lengths] of db.rowCache.keptLiveLengths()) {
    const server = (live.all(ino) as Array<{ chunk_index: bigint; logical_len: bigint }>).map((r) => [
      Number(r.chunk_index),
      Number(r.logical_len),
    ]);
    t.deepEqual(lengths, server, `${what}: the live chunks' lengths of inode ${ino} as kept`);
    n++;
  }
  return n;
}

pgTest(
  'each operation, then every row the cache keeps equals the server row read on another connection (the kept rows are checked, not only the answers)',
  async (t) => {
    const { store, db, other } = await openPair({ disks: 2 });
    try {
      let d = 0;
      let f = 0;
      let g = 0;
      let s = 0;
      let big = 0;
      const touchAll = (): void => {
        for (const ino of [ROOT_INO, d, f, g, s, big]) if (ino !== 0) store.ns.getattr(ino);
        for (const ino of [f, g, big]) if (ino !== 0) store.allocatedBytes(ino); // st_blocks: live chunks' lengths
      };
      const steps: Array<[string, () => unknown]> = [
        ['mkdir', () => (d = store.ns.mkdir(ROOT_INO, 'd', 0o755, 0, 0).ino)],
        ['create', () => (f = store.ns.create(d, 'f', 0o644, 1000, 1000).ino)],
        ['create another', () => (g = store.ns.create(ROOT_INO, 'g', 0o600, 0, 0).ino)],
        ['create a big one', () => (big = store.ns.create(ROOT_INO, 'big', 0o600, 0, 0).ino)],
        ['symlink', () => (s = store.ns.symlink(d, 's', '/x/y', 0, 0).ino)],
        ['mknod', () => store.ns.mknod(d, 'p', 'fifo', 0o644, 0, 0, 0)],
        ['getattr of each', touchAll],
        ['chmod', () => store.ns.setattr(f, { mode: 0o640 })],
        ['chown', () => store.ns.setattr(f, { uid: 7, gid: 8 })],
        ['far times', () => store.ns.setattr(f, { atimeNs: -FAR_NS, mtimeNs: FAR_NS })],
        ['atime only', () => store.ns.setAtimes([[g, 123n]])],
        ['a write: the size grows, mtime written, the far trigger', () => store.write(f, 0, Buffer.alloc(3000, 1))],
        ['a write of a big file', () => store.write(big, 0, Buffer.alloc(300_000, 2))],
        ['getattr of each', touchAll],
        ['a write past the end', () => store.write(big, 400_000, Buffer.alloc(10, 3))],
        ['a punch of a whole chunk', () => store.punchHole(big, SMALL.chunkSizeBytes, SMALL.chunkSizeBytes)],
        ['getattr of each', touchAll],
        ['a write into the hole', () => store.write(big, 300_000, Buffer.alloc(5000, 6))],
        ['truncate', () => store.truncate(big, 100_000)],
        ['punch', () => store.punchHole(big, 0, 8192)],
        ['getattr of each', touchAll],
        ['truncate to nothing', () => store.truncate(big, 0)],
        ['getattr of each', touchAll],
        ['a write after it', () => store.write(big, 0, Buffer.alloc(70_000, 7))],
        ['a small file written', () => store.write(g, 0, Buffer.alloc(100, 4))],
        ['a small file rewritten', () => store.write(g, 10, Buffer.alloc(200, 5))],
        ['setxattr', () => store.ns.setxattr(f, 'user.a', Buffer.from('1'))],
        ['getxattr of a name it lacks', () => store.ns.findxattr(g, 'user.none')],
        ['setxattr replace', () => store.ns.setxattr(f, 'user.a', Buffer.from('22'))],
        ['removexattr', () => store.ns.removexattr(f, 'user.a')],
        ['the layout xattr', () => store.ns.setxattr(d, LAYOUT_XATTR, Buffer.from('replica:2'))],
        ['link', () => store.ns.link(f, ROOT_INO, 'hard')],
        ['getattr of each', touchAll],
        ['rename over a name', () => store.ns.rename(d, 'f', ROOT_INO, 'g')],
        ['exchange', () => store.ns.exchange(ROOT_INO, 'hard', ROOT_INO, 'big')],
        ['rename a directory', () => store.ns.rename(ROOT_INO, 'd', ROOT_INO, 'd2')],
        ['unlink', () => store.ns.unlink(ROOT_INO, 'hard')],
        ['getattr of each', touchAll],
        ['the replaced file deleted', () => store.deleteFile(g)],
        ['the unlinked file deleted', () => store.deleteFile(big)],
        ['unlink the last names', () => [store.ns.unlink(ROOT_INO, 'g'), store.ns.unlink(ROOT_INO, 'big')]],
        ['the file deleted', () => store.deleteFile(f)],
        ['unlink the symlink and the fifo', () => [store.ns.unlink(d, 's'), store.ns.unlink(d, 'p')]],
        ['rmdir', () => store.ns.rmdir(ROOT_INO, 'd2')],
        ['getattr of each', () => [ROOT_INO, d, f, g, s, big].forEach((ino) => store.ns.getattr(ino))],
      ];
      let checked = 0;
      for (const [what, step] of steps) {
        await step();
        checked += keptAsServer(t, store, db, other, `after ${what}`);
      }
      t.true(checked > 50, `rows kept and checked: ${checked}`);
      t.true(db.rowCache.hits > 0, 'the cache answered some reads');
      sameAsServer(t, store, other, [ROOT_INO, d, f, g, s, big], 'at the end');
    } finally {
      other.close();
      await store.close();
    }
  },
);

pgTest(
  'a write of a table the cache keeps, outside an operation that follows it, is refused while rows are trusted',
  async (t) => {
    const { store, db, other } = await openPair();
    try {
      const ino = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0).ino;
      store.ns.getattr(ino);
      const stray = db.prepare('UPDATE inodes SET mode = ? WHERE ino = ?');
      t.throws(() => stray.run(0o100600, ino), { message: /a write of a table the row cache keeps/ });
      t.throws(() => db.transaction(() => stray.run(0o100600, ino))(), { message: /the row cache keeps/ });
      for (const sql of [
        'DELETE FROM xattrs WHERE ino = ?',
        'INSERT INTO dirents(parent, name, ino) VALUES (1, ?, 1)',
        'DELETE FROM chunks WHERE ino = ?',
      ])
        t.throws(() => db.prepare(sql).run(ino), { message: /the row cache keeps/ }, sql);
      t.is(store.ns.getattr(ino)!.mode & 0o7777, 0o644, 'nothing changed');
      sameAsServer(t, store, other, [ROOT_INO, ino], 'after the refusals');
      // Writes of tables it does not keep run anywhere.
      db.prepare('DELETE FROM orphans WHERE ino = ?').run(ino);
    } finally {
      other.close();
      await store.close();
    }
  },
);

/** An inode row as the server prints it (SELECT *, in part). */
function rowOf(ino: number, mode: number, nlink: number, far: string | null = null): CachedResult {
  return new CachedResult(
    ['ino', 'mode', 'nlink', 'mtime_ns', 'mtime_far'],
    [20, 20, 20, 20, 25],
    [[String(ino), String(mode), String(nlink), '5', far]],
    '1',
  );
}

test('the cache ends with the lease time it was given: unrenewed, nothing is served', (t) => {
  let now = 1000;
  const cache = new PgRowCache(() => now);
  cache.keepInode(5, rowOf(5, 420, 1));
  t.is(cache.inode(5), undefined, 'nothing is kept before the lease is held');
  cache.trustUntil(2000);
  cache.keepInode(5, rowOf(5, 420, 1));
  t.is(cache.inode(5)?.getvalue(0, 1), '420');
  cache.patchInode(5, changing({ mode: '384', nlink: { add: -1n } }));
  t.deepEqual(cache.inode(5)?.values, [['5', '384', '0', '5', null]], 'patched');
  cache.patchInode(5, changing({ nlink: { max: 3n } }));
  t.is(cache.inode(5)?.getvalue(0, 2), '3', 'the larger');
  cache.patchInode(5, changing({ nlink: { max: 1n } }));
  t.is(cache.inode(5)?.getvalue(0, 2), '3', 'still the larger');
  cache.patchInode(5, changing({ no_such_column: '1' }));
  t.is(cache.inode(5), undefined, 'a change it cannot apply: dropped');
  cache.keepInode(5, rowOf(5, 420, 1, '100000000000000000000'));
  cache.patchInode(5, changing({ mtime_ns: '7' }));
  t.is(cache.inode(5)?.getvalue(0, 4), '', 'the far-time trigger: *_far cleared when *_ns is written');
  t.true(cache.inode(5)?.getisnull(0, 4));
  cache.keepInode(5, rowOf(5, 420, 1, '100000000000000000000'));
  cache.patchInode(5, changing({ mtime_ns: '9223372036854775807' }));
  t.false(cache.inode(5)?.getisnull(0, 4), 'a clamp keeps it');
  cache.inodeGone(5);
  t.is(cache.inode(5), null, 'a delete: known absent');
  now = 2000;
  t.is(cache.inode(5), undefined, 'the lease time is over');
  t.is(cache.size, 0);
});

test('a row answered after later writes is kept with them replayed in order, or dropped when one cannot be', (t) => {
  const cache = new PgRowCache(() => 0);
  cache.trustUntil(1);
  const setMode = (ino: number, mode: number): void => cache.patchInode(ino, changing({ mode: String(mode) }));
  let at = cache.mark();
  setMode(5, 384);
  cache.patchInode(5, changing({ nlink: { add: 1n } }));
  setMode(6, 256); // another inode
  cache.keepXattr(5, 'user.a', Buffer.from('x'), true); // another table
  cache.keepInodeAfter(5, rowOf(5, 420, 1), at);
  t.deepEqual(
    cache.inode(5)?.values,
    [['5', '384', '2', '5', null]],
    'the later writes replayed on the late row, in order',
  );
  const drops: Array<[string, () => void]> = [
    ['a change it cannot apply', () => cache.patchInode(5, changing({ nope: '1' }))],
    ['everything dropped (a rollback)', () => cache.clear()],
    [
      'more writes than it remembers',
      () => {
        for (let i = 0; i <= 2 * WRITES_FOLLOWED_MAX; i++) setMode(6, i);
      },
    ],
  ];
  for (const [what, write] of drops) {
    cache.clear();
    at = cache.mark();
    setMode(5, 384);
    write();
    cache.keepInodeAfter(5, rowOf(5, 420, 1), at);
    t.is(cache.inode(5), undefined, `not kept after ${what}`);
  }
  cache.clear();
  at = cache.mark();
  cache.inodeGone(5);
  cache.keepInodeAfter(5, rowOf(5, 420, 1), at);
  t.is(cache.inode(5), null, 'a delete after it: kept as gone');
  cache.clear();
  at = cache.mark();
  for (let i = 0; i < WRITES_FOLLOWED_MAX; i++) setMode(6, i);
  cache.keepInodeAfter(5, rowOf(5, 420, 1), at);
  t.is(cache.inode(5)?.getvalue(0, 1), '420', 'as many writes as it remembers: kept');
  cache.clear();
  at = cache.mark();
  cache.keepInode(5, rowOf(5, 111, 1));
  cache.keepInodeAfter(5, rowOf(5, 420, 1), at);
  t.is(cache.inode(5)?.getvalue(0, 1), '111', 'a row kept since (current): not replaced by the late one');
  cache.clear();
  at = cache.mark();
  cache.patchInode(null, (r) => (r.getvalue(0, 1) === '420' ? rowOf(5, 1, 1) : r));
  cache.keepInodeAfter(5, rowOf(5, 420, 1), at);
  t.is(cache.inode(5)?.getvalue(0, 1), '1', 'a write of any row it matches: replayed too');
});

test('a new inode has no xattrs and no chunks until an operation writes some', (t) => {
  const cache = new PgRowCache(() => 0);
  cache.trustUntil(1);
  t.false(cache.isNew(7), 'an inode not made here');
  t.is(cache.xattr(7, 'user.a'), undefined, 'its xattrs: asked');
  cache.newInode(7);
  cache.newInode(8);
  t.true(cache.isNew(7));
  t.is(cache.xattr(7, 'system.posix_acl_access'), null, 'a new inode: no xattr, without asking');
  cache.chunksWritten(7);
  t.false(cache.isNew(7), 'chunks of it written: asked');
  t.true(cache.isNew(8), 'another new inode: still known');
  cache.keepXattr(8, 'user.a', Buffer.from('v'), true);
  t.false(cache.isNew(8), 'an xattr written: no longer new');
  t.deepEqual(cache.xattr(8, 'user.a'), Buffer.from('v'));
  t.is(cache.xattr(8, 'user.b'), undefined, 'other names: asked');
  cache.xattrsGone(8);
  t.is(cache.xattr(8, 'user.a'), undefined, 'gone with its inode');
});

test("names and layouts are kept by the operations and dropped with the rows; a lookup's row is kept as its inode's read", (t) => {
  const cache = new PgRowCache(() => 0);
  cache.trustUntil(1);
  cache.keepInodeRow(new CachedResult(['ino', 'mode'], [20, 20], [['5', '420']], '1'));
  t.is(cache.inode(5)?.getvalue(0, 1), '420', 'its inode row');
  cache.names.set('1', 'b', '5');
  t.is(cache.names.get('1', 'b'), '5');
  t.true(cache.names.wantsListing('1'), 'a directory not known whole is worth reading whole');
  t.is(cache.names.hasEntries('1'), undefined, 'not known whole: whether it is empty is asked');
  const listing = new CachedResult(['name', 'ino'], [25, 20], [['b', '5']], '1');
  const w = cache.writes;
  cache.entryWritten(7, 'x', 9);
  cache.listed('1', listing, w);
  t.true(cache.names.wantsListing('1'), 'a listing older than a write is not kept');
  cache.listed('1', listing, cache.writes);
  t.false(cache.names.wantsListing('1'), 'read whole');
  t.is(cache.names.get('1', 'zz'), null, 'any other name of a directory read whole: absent');
  t.true(cache.names.hasEntries('1'));
  cache.entryWritten(1, 'b', null);
  t.false(cache.names.hasEntries('1'), 'its one entry removed: known empty');
  cache.keepLayout(9, 'replica:1');
  t.is(cache.layouts.get(9), 'replica:1');
  cache.clear();
  t.is(cache.names.size, 0, 'dropped whole: names');
  t.is(cache.layouts.size, 0, 'and layouts');
  t.is(cache.size, 0, 'and rows');
  cache.trustUntil(0);
  cache.keepLayout(9, null);
  t.is(cache.layouts.size, 0, 'nothing is kept while rows are not trusted');
});

pgTest(
  'round trips of a small file: the write of a new file reads nothing, a read after it asks nothing, deletions share one transaction',
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
