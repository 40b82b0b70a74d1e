// Through the mount, a store on PostgreSQL answers exactly as one on SQLite while its row cache and
// pipeline serve it (DESIGN §9: store/meta/postgres/row-cache.ts, store/meta/postgres/pipeline.ts): the same
// shell script of metadata changes (create, chmod, chown, far and near times, a write that clears a
// far time, hard links, renames over names, unlinks, a failing mv) runs on both mounts, and `stat`
// of every name gives the same answers; after a remount of the PostgreSQL store (nothing cached,
// every answer from the server's rows) it gives them again.
import test from 'ava';
import { storeFixture, mkfs, shOk } from '../helpers/mount';
import { PgCluster, pgUnavailableReason, startPgCluster } from '../helpers/pg-cluster';

const unavailable = pgUnavailableReason();
let cluster: PgCluster | null = null;
const onSqlite = storeFixture(test, 'pgcache-sqlite', { mkfs: false });
const onPg = storeFixture(test, 'pgcache-pg', { mkfs: false });
test.after.always(() => cluster?.stop());

const SCRIPT = `set -e
mkdir d d/e
for i in 1 2 3 4 5 6; do echo "file $i" > f$i; done
chmod 600 f1; chmod 751 d; chown 12:34 f2
touch -m -d '2500-01-01 00:00:00' f3
touch -m -d '2500-01-01 00:00:00' f5; echo more >> f5
ln f1 d/hard; mv f2 d/e/moved; mv f6 f4; rm f3
mv d d2 && mv d2 d
if mv nosuch x 2>/dev/null; then exit 1; fi
touch -m -d '2001-02-03 04:05:06' f1 f4 d/e/moved; touch -a -d '2400-06-01 00:00:00' f4
`;
// Names, types, modes, owners, sizes, links, and the times set above (not ctime: it is the clock's; not
// f5's or the directories' mtime: the write and the entries set it to now; atime of f4 only).
const LISTING =
  'find . -mindepth 1 | sort | while read -r n; do stat -c \'%n %F %a %u:%g %s %h\' "$n"; done; ' +
  "stat -c '%n %Y' ./f1 ./f4 ./d/e/moved; stat -c '%n %X' ./f4; " +
  '[ "$(stat -c %Y ./f5)" -lt 16000000000 ] && echo f5 mtime near';

if (unavailable !== null) {
  test('PostgreSQL mount tests skipped', (t) => {
    t.log(`skipped: ${unavailable}`);
    t.pass();
  });
} else {
  test.serial(
    'the same metadata script gives the same stat answers on SQLite and on PostgreSQL, and again after a remount',
    async (t) => {
      cluster = startPgCluster();
      await mkfs(onSqlite.store, ['--disks', '2', '--layout', 'replica:2']);
      await mkfs(onPg.store, ['--disks', '2', '--layout', 'replica:2', '--meta', cluster.createDatabase('cached')]);
      const a = await onSqlite.mount();
      const b = await onPg.mount();
      await shOk(SCRIPT, { cwd: a.mountpoint });
      await shOk(SCRIPT, { cwd: b.mountpoint });
      const expected = await shOk(LISTING, { cwd: a.mountpoint });
      t.regex(expected, /\.\/f4 regular file 644 .*\n/);
      t.regex(expected, /f5 mtime near/, 'the write cleared the far mtime');
      t.is(await shOk(LISTING, { cwd: b.mountpoint }), expected, 'PostgreSQL (cached) = SQLite');
      await b.stop();
      const again = await onPg.mount();
      t.is(
        await shOk(LISTING, { cwd: again.mountpoint }),
        expected,
        'PostgreSQL after a remount (the server rows) = SQLite',
      );
      await again.stop();
      await a.stop();
    },
  );
}
