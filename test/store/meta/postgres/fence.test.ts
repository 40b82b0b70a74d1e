// Fencing of the store's lease on PostgreSQL (DESIGN §9 "Lease and fencing"; store/meta/postgres/fence.ts):
// the database itself refuses, inside the writing transaction, a session whose lease epoch is not
// the lease row's; a take-over waits for the old holder's transaction in flight; a session without
// an epoch writes only while no lease is live; a holder's connection dialled again writes as the
// holder. Through the store: an opener whose lease another opener took answers EROFS to every
// change (namespace, data, shard writes), says why in status, and the new holder's files stay as
// it wrote them. A lease table made before fencing gets its epoch at the next take. An opener
// closed while it waits to follow the new holder sends nothing more on its finished connection.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Store } from '../../../../store/store';
import { ROOT_INO } from '../../../../store/meta/meta';
import { PgDb, PgError } from '../../../../store/meta/postgres/engine';
import { connectPg } from '../../../../store/meta/postgres/connect';
import {
  FENCED_SQLSTATE,
  LeaseLostError,
  TAKE_LOCKS_SQL,
  epochSettingSql,
} from '../../../../store/meta/postgres/fence';
import { awaitAnnouncing } from '../../../../store/meta/postgres/announce';
import { FsError } from '../../../../store/fs-error';
import { pgTestFile } from '../../../helpers/pg-cluster';
import { SMALL, tmpDir } from '../../helpers';

const { pgTest, freshDb } = pgTestFile(test, 'fence');

function isErofs(err: unknown): boolean {
  return err instanceof FsError && err.code === 'EROFS';
}

async function newStore(url: string): Promise<{ dir: string; store: Store }> {
  const dir = path.join(tmpDir(), 'store');
  const store = await Store.create(dir, { disks: 2, layout: 'replica:2', ...SMALL, meta: url });
  return { dir, store };
}

/** A second store directory over the same disks and database (as another machine's, test/helpers/other-machine.ts). */
function otherDir(dir: string): string {
  const other = path.join(tmpDir(), 'other');
  fs.mkdirSync(other, { mode: 0o700 });
  for (const f of fs.readdirSync(dir).filter((n) => n === 'chunkfs.json' || n.endsWith('.key')))
    fs.copyFileSync(path.join(dir, f), path.join(other, f));
  const file = path.join(other, 'chunkfs.json');
  const config = JSON.parse(fs.readFileSync(file, 'utf8'));
  for (const d of config.disks) d.path = path.resolve(dir, d.path);
  fs.writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
  return other;
}

function epochOf(db: PgDb): bigint {
  return BigInt((db.prepare('SELECT epoch FROM chunkfs_lease WHERE k = 0').get() as { epoch: bigint }).epoch);
}

/** A take-over by hand, as postgres/lease.ts does it: a new epoch under the take's locks. */
function takeOver(db: PgDb): bigint {
  return db.transaction(() => {
    db.exec(TAKE_LOCKS_SQL);
    const e = BigInt(
      (
        db
          .prepare(
            `INSERT INTO chunkfs_lease(k, holder, host, pid, note, acquired_at, heartbeat_at, expires_at, epoch)
        VALUES (0, 'other:1:x', 'other', 1, 'test', now(), now(), now() + interval '1 hour', nextval('chunkfs_lease_epoch'))
      ON CONFLICT (k) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at, epoch = excluded.epoch RETURNING epoch`,
          )
          .get() as { epoch: bigint }
      ).epoch,
    );
    db.exec(epochSettingSql(e));
    return e;
  })();
}

function refusedByDb(t: import('ava').ExecutionContext, fn: () => unknown, what: string): void {
  const err = t.throws(fn, undefined, what);
  const fenced = err instanceof LeaseLostError || (err instanceof PgError && err.sqlState === FENCED_SQLSTATE);
  t.true(fenced, `${what}: refused as fenced, got ${String(err)}`);
}

/** fn's error, or null. */
function attempt(fn: () => unknown): unknown {
  try {
    fn();
    return null;
  } catch (e) {
    return e;
  }
}

/**
 * A change of an opener whose lease was taken: refused at once (EROFS), or answered once sent and
 * refused with its reply (DESIGN §9 "PostgreSQL round trips"), so that the barrier (sync) fails.
 */
async function refusedByBarrier(t: import('ava').ExecutionContext, store: Store, fn: () => unknown): Promise<void> {
  const err = attempt(fn);
  if (err !== null) {
    t.true(isErofs(err), String(err));
    return;
  }
  await t.throwsAsync(() => store.sync(), undefined, 'the barrier after a refused change answered early');
}

pgTest(
  'the database refuses a stale epoch in the writing transaction, and a session without one while a lease is live',
  async (t) => {
    const url = freshDb();
    const { store } = await newStore(url);
    const x = connectPg(url);
    const y = connectPg(url);
    try {
      const epoch = epochOf(x);
      t.true(epoch > 0n, 'the take wrote an epoch');
      refusedByDb(t, () => x.exec("INSERT INTO counters(name, value) VALUES ('x', 1)"), 'no epoch, lease live');
      x.exec(epochSettingSql(epoch));
      x.prepare("INSERT INTO counters(name, value) VALUES ('x', 1)").run(); // the holder's epoch: allowed
      // In one transaction, checked once: several statements of several tables.
      x.transaction(() => {
        x.prepare("UPDATE counters SET value = 2 WHERE name = 'x'").run();
        x.prepare("DELETE FROM counters WHERE name = 'x'").run();
      })();
      t.is(x.fencedBy, null, 'a session that never held the lease is not fenced by a refusal');
      x.holdLease(epochSettingSql(epoch)); // as the holder's session: a refusal fences it
      const newer = takeOver(y);
      t.true(newer > epoch, 'a take-over grows the epoch');
      refusedByDb(
        t,
        () => x.exec("INSERT INTO counters(name, value) VALUES ('x', 1)"),
        'the old epoch after a take-over',
      );
      refusedByDb(t, () => x.exec('TRUNCATE heal_queue'), 'TRUNCATE');
      t.truthy(x.fencedBy, 'the session knows it');
      refusedByDb(
        t,
        () =>
          x.transaction(() => {
            x.prepare('UPDATE inodes SET mode = mode WHERE ino = 1').run();
          })(),
        'later writes: refused before they are sent',
      );
      const z = connectPg(url); // a fresh session of the old epoch, through a pipelined implicit transaction
      try {
        z.exec(epochSettingSql(epoch));
        refusedByDb(
          t,
          () =>
            z.transaction(() => {
              z.prepare('UPDATE inodes SET mode = mode WHERE ino = 1').run();
            })(),
          'an implicit (pipelined) transaction',
        );
      } finally {
        z.close();
      }
      y.prepare("INSERT INTO counters(name, value) VALUES ('y', 1)").run(); // the new holder writes
      // The store (the old holder) is refused too, and knows it by the barrier at the latest: its
      // create is answered once sent (DESIGN §9 "PostgreSQL round trips"), the refusal comes with the reply.
      await refusedByBarrier(t, store, () => store.ns.create(ROOT_INO, 'late', 0o644, 0, 0));
      t.truthy(store.leaseLost, 'the store knows it lost the lease');
      t.true(isErofs(attempt(() => store.ns.create(ROOT_INO, 'later', 0o644, 0, 0))), 'the next change: EROFS at once');
      t.is((x.prepare("SELECT count(*) AS n FROM dirents WHERE name = 'late'").get() as { n: bigint }).n, 0n);
    } finally {
      x.close();
      y.close();
      await store.close();
    }
  },
);

pgTest("a take-over waits for the old holder's transaction in flight; its next one is refused", async (t) => {
  const url = freshDb();
  const { store } = await newStore(url);
  await store.close(); // released: the row stays with its epoch
  const x = connectPg(url);
  const y = connectPg(url);
  try {
    const e1 = takeOver(x);
    x.exec('BEGIN');
    x.exec("INSERT INTO counters(name, value) VALUES ('inflight', 1)"); // checked: the fence's lock held shared
    y.exec("SET lock_timeout = '300ms'");
    const waited = t.throws(() => takeOver(y), undefined, 'the take-over waits for the transaction in flight');
    t.regex(String(waited), /lock timeout/);
    x.exec('COMMIT');
    const e2 = takeOver(y);
    t.true(e2 > e1);
    refusedByDb(
      t,
      () => x.exec("INSERT INTO counters(name, value) VALUES ('after', 1)"),
      'the old holder after the take-over',
    );
    t.is(
      String(
        (
          y
            .prepare(
              "SELECT string_agg(name, ',' ORDER BY name) AS n FROM counters WHERE name IN ('inflight', 'after')",
            )
            .get() as { n: string }
        ).n,
      ),
      'inflight',
    );
  } finally {
    x.close();
    y.close();
  }
});

pgTest(
  "an opener whose lease was taken over: every change EROFS (namespace, data, shards), status says why; the new holder's files intact",
  async (t) => {
    const url = freshDb();
    const { dir, store: a } = await newStore(url);
    const f = a.ns.create(ROOT_INO, 'a-file', 0o644, 0, 0).ino;
    await a.write(f, 0, Buffer.alloc(300_000, 1));
    await a.sync();
    // This process's holder is "no longer running" to another opener here: it takes over at once.
    const b = await Store.open(otherDir(dir), { lockNote: 'the new holder' });
    try {
      const g = b.ns.create(ROOT_INO, 'b-file', 0o644, 0, 0).ino;
      const bytes = Buffer.alloc(600_000);
      for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7) & 0xff;
      await b.write(g, 0, bytes);
      await b.sync();
      const refused = async (what: string, fn: () => unknown): Promise<void> => {
        const err = await (async () => {
          try {
            await fn();
            return null;
          } catch (e) {
            return e;
          }
        })();
        t.true(isErofs(err), `${what}: ${String(err)}`);
      };
      await refusedByBarrier(t, a, () => a.ns.create(ROOT_INO, 'c-file', 0o644, 0, 0));
      t.truthy(a.leaseLost, 'found out at its first write, by the barrier at the latest');
      await refused('create', () => a.ns.create(ROOT_INO, 'c-file', 0o644, 0, 0));
      t.is(a.ns.lookup(ROOT_INO, 'b-file')?.ino, g, "its caches dropped: the new holder's name is seen");
      await refused('unlink', () => a.ns.unlink(ROOT_INO, 'b-file'));
      await refused('chmod', () => a.ns.setattr(g, { mode: 0o600 }));
      await refused('write', () => a.write(f, 0, Buffer.alloc(300_000, 2)));
      t.throws(
        () => (a as unknown as { env: { shards: { writeGate(): void } } }).env.shards.writeGate(),
        { instanceOf: LeaseLostError },
        'no shard is written or removed',
      );
      const status = await a.status();
      t.regex(String(status.metadata.leaseLost), /took it over|taken over/);
      t.deepEqual(await b.read(g, 0, bytes.length), bytes, "the new holder's file, byte for byte");
      t.is(b.ns.lookup(ROOT_INO, 'c-file'), null);
      t.is(b.ns.getattr(g)!.mode & 0o777, 0o644);
    } finally {
      await a.close();
      await b.close();
    }
  },
);

pgTest(
  "the holder's connection dialled again writes as the holder; a lease table made before fencing gets its epoch",
  async (t) => {
    const url = freshDb();
    const { dir, store } = await newStore(url);
    await store.close();
    const x = connectPg(url);
    try {
      // A lease table as builds before fencing made it: no epoch column, no sequence.
      x.exec('DROP TABLE chunkfs_lease; DROP SEQUENCE chunkfs_lease_epoch');
      x.exec(`CREATE TABLE chunkfs_lease(k INT PRIMARY KEY CHECK (k = 0), holder TEXT NOT NULL, host TEXT NOT NULL, pid BIGINT NOT NULL,
      note TEXT NOT NULL, acquired_at TIMESTAMPTZ NOT NULL, heartbeat_at TIMESTAMPTZ NOT NULL, expires_at TIMESTAMPTZ NOT NULL)`);
      const s = await Store.open(dir);
      try {
        t.true(epochOf(x) > 0n, 'the epoch column and sequence were added at the take');
        const pid = (s as unknown as { db: PgDb }).db.prepare('SELECT pg_backend_pid() AS p').get() as { p: bigint };
        x.prepare('SELECT pg_terminate_backend(?)').get(pid.p);
        // The first statement finds the connection gone; the next one, a second later, dials again.
        t.throws(() => s.ns.create(ROOT_INO, 'during', 0o644, 0, 0));
        await new Promise((r) => setTimeout(r, 1100));
        const ino = s.ns.create(ROOT_INO, 'after', 0o644, 0, 0).ino;
        t.true(ino > 0, 'written as the holder on the new connection');
        t.is(s.leaseLost, null);
      } finally {
        await s.close();
      }
    } finally {
      x.close();
    }
  },
);

pgTest(
  'an opener closed while it waits to follow the new holder sends nothing more on its finished connection',
  async (t) => {
    const url = freshDb();
    const { store } = await newStore(url); // a live holder that no follower listens to: it announces nothing
    const db = connectPg(url);
    const lines: string[] = [];
    try {
      const waiting = awaitAnnouncing(db, (line) => lines.push(line)); // looked once, now waits
      db.close(); // as Store.close does while a fenced opener waits to follow (store/store.ts loseLease)
      await t.notThrowsAsync(waiting, 'the wait ends with the connection, asking nothing more');
      t.deepEqual(lines, []);
      const err = t.throws(() => db.prepare('SELECT 1').get(), { instanceOf: PgError });
      t.regex(err!.message, /closed with the store/);
      t.true(err!.message.includes(db.target), err!.message);
      t.notRegex(err!.message, /NULL/, "never libpq's text for a finished connection");
    } finally {
      await store.close();
    }
  },
);
