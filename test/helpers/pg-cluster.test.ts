// The tests' PostgreSQL clusters (test/helpers/pg-cluster.ts): with a run's shared cluster named in
// CHUNKFS_TEST_PG_SOCKET (scripts/test/run-tests.ts), startPgCluster() gives views of it whose
// databases never meet (the same name in two views is two databases), whose stop() drops only their
// own, and which refuse to restart, pause or resume the server the other test processes use;
// settings, or privateCluster(), still give a cluster of one's own.
import test from 'ava';
import { SHARED_CLUSTER_ENV, pgTestFile, privateCluster, startPgCluster } from './pg-cluster';

const { pgTest } = pgTestFile(test, 'unused');

const nameOf = (url: string): string => new URL(url).pathname.slice(1);

pgTest('views of a shared cluster keep their databases apart, drop their own, and leave the server alone', (t) => {
  const run = privateCluster();
  const saved = process.env[SHARED_CLUSTER_ENV];
  process.env[SHARED_CLUSTER_ENV] = run.socketDir;
  try {
    const a = startPgCluster();
    const b = startPgCluster();
    t.is(a.socketDir, run.socketDir, "a view of the run's cluster, no server of its own");
    const inA = a.createDatabase('same');
    const inB = b.createDatabase('same');
    t.not(nameOf(inA), nameOf(inB), 'one name, two databases');
    a.query('same', 'CREATE TABLE only_in_a(v int)');
    t.is(b.query('same', "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").trim(), '0');
    t.is(a.url(nameOf(inA)), inA, 'a name read back from a URL the view gave is the same database');
    t.is(nameOf(a.copyDatabase(nameOf(inA), 'copy')), nameOf(a.url('copy')));
    for (const call of [() => a.restart(), () => a.pause(), () => a.resume()]) {
      t.throws(call, { message: /shared PostgreSQL cluster.*privateCluster\(\)/ });
    }
    a.stop();
    const left = run.query('postgres', 'SELECT datname FROM pg_database').split('\n');
    const dropped = !left.includes(nameOf(inA)) && !left.includes(nameOf(a.url('copy')));
    t.true(dropped, "the stopped view's databases are dropped");
    t.true(left.includes(nameOf(inB)), "the other view's database stays");
    t.is(b.query('same', 'SELECT 1').trim(), '1', 'the server runs on, serving the other view');
    const own = startPgCluster({ autovacuum: 'off' });
    try {
      t.not(own.socketDir, run.socketDir, 'settings: a cluster of its own');
    } finally {
      own.stop();
    }
    b.stop();
  } finally {
    if (saved === undefined) delete process.env[SHARED_CLUSTER_ENV];
    else process.env[SHARED_CLUSTER_ENV] = saved;
    run.stop();
  }
});

test('a shared cluster named but not listening is refused, naming it', (t) => {
  const saved = process.env[SHARED_CLUSTER_ENV];
  process.env[SHARED_CLUSTER_ENV] = '/nonexistent/cfspg';
  try {
    const message = /CHUNKFS_TEST_PG_SOCKET=\/nonexistent\/cfspg: no PostgreSQL server listens there/;
    t.throws(() => startPgCluster(), { message });
  } finally {
    if (saved === undefined) delete process.env[SHARED_CLUSTER_ENV];
    else process.env[SHARED_CLUSTER_ENV] = saved;
  }
});
