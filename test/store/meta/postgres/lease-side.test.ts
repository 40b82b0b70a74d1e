// The lease holder's renewals and its look for read-only followers run on a side connection
// (DESIGN §9 "Lease and fencing"; store/meta/postgres/side-connection.ts), not behind the metadata
// connection's transactions answered early, even while those wait on a lock another session holds.
// Fencing holds: a renewal that finds another epoch in the row fences the holder, and nothing it
// sends after the take-over commits, answered early or not. On a real throwaway cluster.
import test from 'ava';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { Store } from '../../../../store/store';
import { PgDb } from '../../../../store/meta/postgres/engine';
import { connectPg } from '../../../../store/meta/postgres/connect';
import { PgLease } from '../../../../store/meta/postgres/lease';
import { ChangeAnnouncer } from '../../../../store/meta/postgres/announce';
import { FOLLOWERS_SQL, FOLLOWER_APP_NAME } from '../../../../store/meta/postgres/change-notify';
import { epochSettingSql } from '../../../../store/meta/postgres/fence';
import { FsError } from '../../../../store/fs-error';
import { PG_BIN_DIR, pgTestFile } from '../../../helpers/pg-cluster';
import { SMALL, tmpDir } from '../../helpers';

const { pgTest, freshDb } = pgTestFile(test, 'leaseside');

/** Polls for a lock, this far apart, at most this many times. */
const POLL_MS = 20;
const POLLS_MAX = 3000;
/** Namespace changes answered while the lock holds them. */
const QUEUED = 4;

// The store's lease and announcer, as its open makes them.
let lease: PgLease | null = null;
let announcer: ChangeAnnouncer | null = null;
const acquire = PgLease.prototype.acquire;
PgLease.prototype.acquire = function (this: PgLease, note: string): void {
  lease = this;
  acquire.call(this, note);
};
const start = ChangeAnnouncer.prototype.start;
ChangeAnnouncer.prototype.start = function (this: ChangeAnnouncer): void {
  announcer = this;
  start.call(this);
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function holder(url: string): Promise<{ store: Store; db: PgDb }> {
  const store = await Store.create(path.join(tmpDir(), 'store'), {
    disks: 1,
    layout: 'replica:1',
    ...SMALL,
    meta: url,
  });
  store.ns.create(1, 'warm', 0o644, 0, 0); // statements prepared: later ones need no round trip of their own
  await store.sync();
  return { store, db: (store as unknown as { db: PgDb }).db };
}

function direntsLocked(other: PgDb): boolean {
  const sql =
    "SELECT count(*) AS n FROM pg_locks WHERE relation = 'dirents'::regclass AND mode = 'ExclusiveLock' AND granted";
  return (other.prepare(sql).get() as { n: bigint }).n === 1n;
}

/**
 * psql holds dirents' write lock for seconds (or until cancelled): the store's namespace changes wait
 * on the server. Resolves once it holds it, to when psql ends (wrapped: a promise returned is awaited).
 */
async function lockDirents(url: string, other: PgDb, seconds: number): Promise<{ ended: Promise<unknown> }> {
  const psql = spawn(path.join(PG_BIN_DIR, 'psql'), [
    url,
    '-c',
    `BEGIN; LOCK TABLE dirents IN EXCLUSIVE MODE; SELECT pg_sleep(${seconds}); COMMIT;`,
  ]);
  const ended = new Promise((resolve) => psql.on('exit', resolve));
  for (let i = 0; i < POLLS_MAX && !direntsLocked(other); i++) await sleep(POLL_MS);
  if (!direntsLocked(other)) throw new Error('psql did not take the lock');
  return { ended };
}

function cancelLock(other: PgDb): void {
  other
    .prepare(
      'SELECT pg_cancel_backend(pid) FROM pg_locks ' +
        "WHERE relation = 'dirents'::regclass AND mode = 'ExclusiveLock' AND granted",
    )
    .all();
}

function heartbeat(other: PgDb): string {
  return (other.prepare('SELECT heartbeat_at::text AS h FROM chunkfs_lease WHERE k = 0').get() as { h: string }).h;
}

function names(other: PgDb): string[] {
  const rows = other.prepare('SELECT name FROM dirents WHERE parent = 1 ORDER BY name').all() as Array<{
    name: string;
  }>;
  return rows.map((r) => r.name);
}

pgTest('a renewal is a round trip of its own while answered transactions wait on a lock', async (t) => {
  const url = freshDb();
  const { store, db } = await holder(url);
  const other = connectPg(url);
  try {
    const { ended } = await lockDirents(url, other, 60);
    const before = heartbeat(other);
    for (let i = 0; i < QUEUED; i++) store.ns.create(1, `f${i}`, 0o644, 0, 0);
    const queued = db.unanswered;
    t.true(queued > 0, 'changes answered, their replies unread');
    lease!.renew(); // on the metadata connection it would wait for the lock (60 s)
    t.is(db.unanswered, queued, 'the renewal read none of their replies');
    t.true(direntsLocked(other), 'it returned while the lock still held them');
    t.not(heartbeat(other), before, 'the lease was extended');
    t.true(lease!.side.dialled, 'on the side connection');
    cancelLock(other);
    await ended;
    await store.sync();
    t.deepEqual(names(other), ['f0', 'f1', 'f2', 'f3', 'warm'], 'the answered changes committed after the lock');
  } finally {
    await store.close();
    other.close();
  }
});

pgTest(
  'a follower is seen, and the changes announced, under a write load that always has replies unread',
  async (t) => {
    const url = freshDb();
    const { store, db } = await holder(url);
    const other = connectPg(url);
    const follower = connectPg(url);
    try {
      follower.exec(`SET application_name = '${FOLLOWER_APP_NAME}'`);
      t.is((other.prepare(FOLLOWERS_SQL).get() as { on: bigint }).on, 0n, 'no follower at open: announcing off');
      const { ended } = await lockDirents(url, other, 2);
      for (let i = 0; i < QUEUED; i++) store.ns.create(1, `f${i}`, 0o644, 0, 0);
      t.true(db.unanswered > 0, 'replies unread at the check');
      announcer!.check(); // the switch waits for the replies before it, then turns announcing on
      t.is((other.prepare(FOLLOWERS_SQL).get() as { on: bigint }).on, 1n, 'announcing on for the follower');
      await ended;
      await store.sync();
    } finally {
      await store.close();
      other.close();
      follower.close();
    }
  },
);

pgTest(
  'a renewal on the side connection that finds another epoch fences the holder: nothing it sends after commits',
  async (t) => {
    const url = freshDb();
    const { store, db } = await holder(url);
    const other = connectPg(url);
    try {
      // Another opener takes the lease over (as postgres/lease.ts does, in a new epoch).
      other.transaction(() => {
        other.exec('LOCK TABLE chunkfs_lease IN EXCLUSIVE MODE');
        const e = other
          .prepare(
            "UPDATE chunkfs_lease SET holder = 'other:1:x', host = 'other', pid = 1, " +
              "epoch = nextval('chunkfs_lease_epoch') RETURNING epoch",
          )
          .get() as { epoch: bigint };
        other.exec(epochSettingSql(e.epoch));
      })();
      let refused = 0;
      const attempt = (name: string): void => {
        try {
          store.ns.create(1, name, 0o644, 0, 0);
        } catch (err) {
          t.true(err instanceof FsError && err.code === 'EROFS', String(err));
          refused++;
        }
      };
      attempt('answered'); // answered early, or refused if its reply already told
      lease!.renew();
      t.regex(db.fencedBy ?? '', /other pid 1|took it over|taken over/, 'fenced');
      attempt('after');
      t.true(refused >= 1, 'the change after the renewal refused at once');
      await t.throwsAsync(() => store.sync(), undefined, 'the barrier fails: a change answered was refused');
      t.deepEqual(names(other), ['warm'], 'nothing of the old holder committed after the take-over');
    } finally {
      await store.close().catch(() => undefined);
      other.close();
    }
  },
);

pgTest(
  'a side session killed: that renewal runs on the metadata connection, the next one dials a new side',
  async (t) => {
    const url = freshDb();
    const { store, db } = await holder(url);
    const other = connectPg(url);
    try {
      lease!.renew();
      t.true(lease!.side.dialled);
      const side = (lease!.side as unknown as { side: PgDb }).side;
      const pid = (side.prepare('SELECT pg_backend_pid() AS pid').get() as { pid: bigint }).pid;
      other.prepare('SELECT pg_terminate_backend(?, 30000)').get(pid);
      const before = heartbeat(other);
      const trips = db.roundTrips;
      lease!.renew();
      t.not(heartbeat(other), before, 'renewed all the same');
      t.true(db.roundTrips > trips, 'on the metadata connection (its statement prepared there first)');
      t.false(lease!.side.dialled, 'the killed side hung up');
      t.is(db.fencedBy, null);
      const fellBack = db.roundTrips;
      lease!.renew();
      t.true(lease!.side.dialled, 'a new side for the next renewal');
      t.is(db.roundTrips, fellBack, 'which costs the metadata connection nothing');
    } finally {
      await store.close();
      other.close();
    }
  },
);
