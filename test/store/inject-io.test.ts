// The live mount's injectable Io (store/io/inject-io.ts over store/io/fault-table.ts): with no fault set it
// is the inner Io itself (same file objects, the inline fast path open); faults hit only their disk,
// their op class, for their count or duration; the small-file SyncIo only sees a disk taken offline;
// and a store opened on it serves reads around a disk failing with EIO.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FAULTS_MAX, FaultTable, InjectedFaultError } from '../../store/io/fault-table';
import { InjectIo, InjectSyncIo } from '../../store/io/inject-io';
import { NodeIo } from '../../store/io/io';
import { Store } from '../../store/store';
import { nodeSyncIo } from '../../store/io/sync-io';
import { SMALL, prng, randomBytes, tmpDir } from './helpers';

function disks(): { dir: string; d1: string; d10: string } {
  const dir = tmpDir('chunkfs-inject-');
  const d1 = path.join(dir, 'd1');
  const d10 = path.join(dir, 'd10');
  for (const d of [d1, d10]) {
    fs.mkdirSync(d);
    fs.writeFileSync(path.join(d, 'f'), 'abc');
  }
  return { dir, d1, d10 };
}

test('no fault set: the inner Io answers, its files unwrapped and its inline path open', async (t) => {
  const { d1 } = disks();
  const inner = new NodeIo();
  const io = new InjectIo(inner, new FaultTable());
  const a = await io.open(path.join(d1, 'f'), 'read');
  t.is(a.constructor.name, 'NodeFile');
  t.is((await a.pread(3, 0)).toString(), 'abc');
  const now = io.openNow(path.join(d1, 'f'));
  t.not(now, null, 'the cached descriptor is offered inline');
  await now!.close();
  await a.close();
  inner.closeAll();
});

test('EIO for N operations hits only its disk (not a disk whose path merely starts the same), then ends', async (t) => {
  const { d1, d10 } = disks();
  const faults = new FaultTable();
  const io = new InjectIo(new NodeIo(), faults);
  faults.add({ kind: 'eio', diskId: 1, root: d1, ops: 'all', count: 2 });
  t.true(faults.armed);
  t.is(io.openNow(path.join(d1, 'f')), null, 'no inline path while a fault is set');
  const f10 = await io.open(path.join(d10, 'f'), 'read');
  t.is((await f10.pread(3, 0)).toString(), 'abc');
  await f10.close();
  const e1 = await t.throwsAsync(io.open(path.join(d1, 'f'), 'read'), { instanceOf: InjectedFaultError });
  t.is((e1 as InjectedFaultError).code, 'EIO');
  await t.throwsAsync(io.stat(path.join(d1, 'f')), { instanceOf: InjectedFaultError });
  t.false(faults.armed, 'spent after its count');
  t.deepEqual(faults.list(), []);
  t.not(await io.stat(path.join(d1, 'f')), null);
});

test('op classes: read-only EIO spares writes; ENOSPC never hits a read', async (t) => {
  const { d1 } = disks();
  const faults = new FaultTable();
  const io = new InjectIo(new NodeIo(), faults);
  faults.add({ kind: 'eio', diskId: 1, root: d1, ops: 'read' });
  await io.mkdir(path.join(d1, 'sub'));
  await t.throwsAsync(io.readdir(d1), { instanceOf: InjectedFaultError });
  faults.clear();
  faults.add({ kind: 'enospc', diskId: 1, root: d1, ops: 'write' });
  t.deepEqual((await io.readdir(d1)).sort(), ['f', 'sub']);
  const err = await t.throwsAsync(io.open(path.join(d1, 'new'), 'create-exclusive'));
  t.is((err as InjectedFaultError).code, 'ENOSPC');
  const f = await io.open(path.join(d1, 'f'), 'readwrite');
  await t.throwsAsync(f.pwrite(Buffer.from('x'), 0), { message: /ENOSPC: injected fault #2 on pwrite/ });
  t.is((await f.pread(3, 0)).toString(), 'abc', 'nothing written');
  await f.close();
});

test('a duration ends a fault at its time; latency is counted per operation; the table is bounded', (t) => {
  const faults = new FaultTable();
  faults.add({ kind: 'eio', diskId: 1, root: '/d1', ops: 'all', durationMs: 1000 }, 5_000);
  faults.add({ kind: 'latency', diskId: 1, root: '/d1', ops: 'all', latencyMs: 7 }, 5_000);
  const hit = faults.check('read', 'pread', '/d1/x', 5_999);
  t.is(hit.delayMs, 7);
  t.is(hit.error?.code, 'EIO');
  const later = faults.check('read', 'pread', '/d1/x', 6_000);
  t.is(later.delayMs, 7);
  t.is(later.error, null, 'the EIO fault ended after 1000 ms');
  t.deepEqual(
    faults.list(6_000).map((f) => [f.kind, f.hits]),
    [['latency', 2]],
  );
  for (let i = faults.list().length; i < FAULTS_MAX; i++)
    faults.add({ kind: 'latency', diskId: 2, root: '/d2', ops: 'all', latencyMs: 1 });
  t.throws(() => faults.add({ kind: 'eio', diskId: 2, root: '/d2', ops: 'all' }), { message: /at most 64 faults/ });
  t.throws(() => new FaultTable().add({ kind: 'latency', diskId: 2, root: '/d2', ops: 'all', latencyMs: 0 }), {
    message: /latency must be/,
  });
});

test('the small files see only a disk taken offline, never an EIO or latency fault', (t) => {
  const { d1 } = disks();
  const faults = new FaultTable();
  const sync = new InjectSyncIo(nodeSyncIo, faults);
  faults.add({ kind: 'eio', diskId: 1, root: d1, ops: 'all', count: 1 });
  t.is(sync.readFile(path.join(d1, 'f')).toString(), 'abc');
  t.is(faults.list()[0].hits, 0, 'the identity check did not use up the EIO count');
  faults.add({ kind: 'offline', diskId: 1, root: d1, ops: 'all' });
  t.throws(() => sync.stat(d1), { code: 'ENODEV' } as never);
});

test('a store on the injectable Io: EIO on a replica disk is served around, counted and queued for heal', async (t) => {
  const dir = path.join(tmpDir(), 'store');
  await (await Store.create(dir, { disks: 6, layout: 'replica:3', ...SMALL })).close();
  const faults = new FaultTable();
  const store = await Store.open(dir, {
    io: new InjectIo(new NodeIo(), faults),
    syncIo: new InjectSyncIo(nodeSyncIo, faults),
  });
  try {
    const a = store.ns.create(1, 'f', 0o644, 0, 0);
    const data = randomBytes(prng(7), 300_000);
    await store.write(a.ino, 0, data);
    const first = await store.shardPath(a.ino, 0, 0);
    const diskId = [...store.diskPaths()].find(([, root]) => first!.startsWith(root + '/'))![0];
    faults.add({ kind: 'eio', diskId, root: store.diskPaths().get(diskId)!, ops: 'read' });
    t.true((await store.read(a.ino, 0, data.length)).equals(data));
    const s = await store.status();
    t.true(s.counters.io_errors >= 1);
    t.true(s.counters.failovers >= 1);
    t.true(s.healQueueLength >= 1);
    faults.add({ kind: 'offline', diskId, root: store.diskPaths().get(diskId)!, ops: 'all' });
    store.refreshDisks();
    t.is((await store.status()).disks.find((d) => d.id === diskId)!.state, 'offline');
    faults.clear();
    store.refreshDisks();
    t.is((await store.status()).disks.find((d) => d.id === diskId)!.state, 'ok');
  } finally {
    await store.close();
  }
});
