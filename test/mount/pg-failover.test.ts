// The metadata database's own fail-over (DESIGN §9), through the path users take: a primary
// PostgreSQL with a synchronous standby (pg_basebackup -R, synchronous_standby_names), a store made
// with a multi-host connection string naming both (target_session_attrs=read-write: libpq connects
// to whichever takes writes), mounted; files written and fsync'd, a writer appending fsync'd records;
// the primary is killed (immediate stop: its unflushed WAL is gone) and the standby promoted. The
// mount reconnects to the promoted standby on its own and goes on: new writes work, every fsync'd
// file and record reads back exactly, there and after a fresh mount. Clusters are throwaway ones
// (test/helpers/pg-cluster.ts), stopped even when the test fails.
import test from 'ava';
import * as path from 'node:path';
import { storeFixture, mkfs, shOk, chunkfsOk, ChunkfsMount } from '../helpers/mount';
import { PgCluster, pgUnavailableReason, privateCluster } from '../helpers/pg-cluster';
import { RecordWriter, badAcked } from '../helpers/record-writer';
import { connectPg } from '../../store/meta/postgres/connect';

/** Acks of the writer before the primary is killed, and after (the mount goes on). */
const ACKS_BETWEEN = 20;
/** Bytes of the files written and fsync'd before the fail-over. */
const FILE_BYTES = [1, 70_000, 3 << 20];
/** Polls (POLL_MS apart) until the standby shows as synchronous on the primary. */
const SYNC_POLLS_MAX = 1200; // x 100 ms: a bound far past a loaded machine's time
const POLL_MS = 100;
const unavailable = pgUnavailableReason();

let primary: PgCluster | null = null;
let standby: PgCluster | null = null;
const fixture = storeFixture(test, 'pgfailover', { mkfs: false });
test.after.always(() => {
  standby?.stop();
  primary?.stop();
});
test.serial.afterEach.always(() => fixture.stopAll());

/** Files of the given sizes (random bytes) written and fsync'd one by one; their sha256 sums. */
async function writeSynced(mp: string, prefix: string): Promise<string> {
  await shOk(
    FILE_BYTES.map((n, i) => `head -c ${n} /dev/urandom > ${mp}/${prefix}${i} && sync ${mp}/${prefix}${i}`).join(
      ' && ',
    ),
  );
  return sums(mp, prefix);
}

function sums(mp: string, prefix: string): Promise<string> {
  return shOk(`cd ${mp} && sha256sum ${FILE_BYTES.map((_, i) => `${prefix}${i}`).join(' ')}`);
}

async function waitSynchronous(p: PgCluster): Promise<void> {
  for (let i = 0; i < SYNC_POLLS_MAX; i++) {
    if (p.query('postgres', 'SELECT sync_state FROM pg_stat_replication').trim() === 'sync') return;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  throw new Error('the standby never became synchronous');
}

if (unavailable !== null) {
  test('PostgreSQL fail-over tests skipped', (t) => {
    t.log(`skipped: ${unavailable}`);
    t.pass();
  });
} else {
  test.serial(
    "the primary killed and its synchronous standby promoted under a live mount: it reconnects and goes on, nothing fsync'd is lost",
    async (t) => {
      // '*': any standby is synchronous; quoted for the shell pg_ctl starts the server with.
      primary = privateCluster({ synchronous_standby_names: "'*'" });
      standby = primary.standby(); // first: every commit on the primary waits for it from now on
      await waitSynchronous(primary);
      primary.createDatabase('failover');
      const both = `host=${primary.socketDir},${standby.socketDir} port=5432,5432`;
      const conninfo = `${both} dbname=failover user=postgres target_session_attrs=read-write`;
      // The URL form names both too, and reaches the one that takes writes.
      const uri =
        `postgresql:///failover?host=${encodeURIComponent(primary.socketDir)},${encodeURIComponent(standby.socketDir)}` +
        '&port=5432,5432&user=postgres&target_session_attrs=read-write';
      const probe = connectPg(uri);
      t.deepEqual(
        probe.prepare('SELECT pg_is_in_recovery() AS r').get(),
        { r: 0n },
        'the URL form reaches the primary',
      );
      probe.close();
      await mkfs(fixture.store, ['--disks', '4', '--layout', 'replica:2', '--meta', conninfo]);
      const m: ChunkfsMount = await fixture.mount();
      const mp = m.mountpoint;
      const before = await writeSynced(mp, 'before');
      const w = new RecordWriter(path.join(mp, 'records.bin'), path.join(fixture.dir, 'stop'));
      try {
        await w.waitAcks(ACKS_BETWEEN);
        const mark = w.mark();
        primary.crash();
        const killedMs = Date.now();
        standby.promote();
        const promotedMs = Date.now();
        await w.waitRecovered(mark); // records failed, then the mount went on, on the promoted standby
        t.log(
          `ms from the kill to the promotion: ${promotedMs - killedMs}; to an fsync'd record after a failed one: ${Date.now() - promotedMs}`,
        );
        await w.waitAcks(ACKS_BETWEEN);
      } finally {
        await w.stop();
      }
      t.log(`writer: ${w.acked.length} acks, ${w.errors.length} errors (${w.errors.slice(0, 5).join(', ')})`);
      t.true(
        w.errors.every((e) => / EIO$/.test(e)),
        w.errors.slice(0, 5).join(', '),
      );
      t.is(await badAcked(path.join(mp, 'records.bin'), w.acked), '0 []');
      t.is(await sums(mp, 'before'), before, "every file fsync'd before the fail-over, byte for byte");
      const after = await writeSynced(mp, 'after');
      const status = await chunkfsOk(['status', fixture.store]);
      const reconnects = Number(/meta_reconnects: (\d+)/.exec(status)?.[1] ?? -1);
      t.true(reconnects >= 1, status);
      t.regex(m.output(), /reconnected to the metadata database at host=/);
      t.log(
        m
          .output()
          .split('\n')
          .filter((l) => /reconnected/.test(l))
          .join('\n'),
      );
      t.is(standby.query('failover', 'SELECT pg_is_in_recovery()').trim(), 'f');
      await m.stop();
      // A fresh mount, with the old primary still down: the same string leads to the promoted standby.
      const again = await fixture.mount();
      t.is(await sums(again.mountpoint, 'before'), before);
      t.is(await sums(again.mountpoint, 'after'), after);
      t.is(await badAcked(path.join(again.mountpoint, 'records.bin'), w.acked), '0 []');
      await again.stop();
    },
  );
}
