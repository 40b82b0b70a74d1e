// fs/atime.ts: relatime's rule; accesses batched into one write per window; strictatime moves atime
// on every access; noatime never; a pending atime is what stat shows.
import test from 'ava';
import { AtimeUpdates, RELATIME_AGE_NS, relatimeDue } from '../../fs/atime';
import type { NamespaceOps } from '../../store/meta/ops';

test('relatimeDue: atime not after mtime or ctime, or a day old', (t) => {
  const now = 10n * RELATIME_AGE_NS;
  t.true(relatimeDue(100n, 100n, 50n, now)); // atime == mtime
  t.true(relatimeDue(100n, 50n, 200n, now)); // before ctime
  t.false(relatimeDue(now - 1n, now - 2n, now - 2n, now));
  t.true(relatimeDue(now - RELATIME_AGE_NS, now - 2n * RELATIME_AGE_NS, now - 2n * RELATIME_AGE_NS, now));
  t.false(relatimeDue(now - RELATIME_AGE_NS + 1n, 0n, 0n, now));
});

function fakeNs(rows: Map<number, { atimeNs: bigint; mtimeNs: bigint; ctimeNs: bigint }>) {
  const writes: Array<Array<[number, bigint]>> = [];
  let reads = 0;
  const ns = {
    getattr: (ino: number) => {
      reads++;
      return rows.get(ino) ?? null;
    },
    setAtimes: (times: Array<[number, bigint]>) => {
      writes.push(times);
      for (const [ino, v] of times) rows.get(ino)!.atimeNs = v;
    },
  } as unknown as NamespaceOps;
  return { ns, writes, reads: () => reads };
}

test('relatime: many reads of one inode cost one row read and one batched write', (t) => {
  const rows = new Map([
    [7, { atimeNs: 1n, mtimeNs: 2n, ctimeNs: 2n }],
    [8, { atimeNs: 2n ** 62n, mtimeNs: 1n, ctimeNs: 1n }],
  ]);
  const f = fakeNs(rows);
  const u = new AtimeUpdates(f.ns, 'relatime', () => undefined);
  for (let i = 0; i < 1000; i++) {
    u.accessed(7);
    u.accessed(8);
  }
  t.is(f.reads(), 2);
  t.true(u.pendingOf(7)! > 2n);
  t.is(u.pendingOf(8), null); // atime after mtime and ctime, and recent (in the future here): not due
  t.deepEqual(f.writes, []);
  u.flush();
  t.is(f.writes.length, 1);
  t.deepEqual(
    f.writes[0].map(([ino]) => ino),
    [7],
  );
  t.is(u.pendingOf(7), null);
  u.flush();
  t.is(f.writes.length, 1); // nothing pending: no write
});

test('strictatime moves atime on every access; noatime never; dropPending forgets an access', (t) => {
  const rows = new Map([[7, { atimeNs: 2n ** 62n, mtimeNs: 1n, ctimeNs: 1n }]]);
  const strict = fakeNs(rows);
  const s = new AtimeUpdates(strict.ns, 'strictatime', () => undefined);
  s.accessed(7);
  const first = s.pendingOf(7)!;
  s.accessed(7);
  t.true(s.pendingOf(7)! >= first);
  s.dropPending(7);
  t.is(s.pendingOf(7), null);
  s.flush();
  t.deepEqual(strict.writes, []);
  const none = fakeNs(rows);
  const n = new AtimeUpdates(none.ns, 'noatime', () => undefined);
  n.accessed(7);
  n.flush();
  t.is(none.reads(), 0);
  t.deepEqual(none.writes, []);
});
