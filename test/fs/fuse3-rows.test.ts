// The libfuse3 transport's conversions, without a mount: a setattr row's to_set bits and times
// become core changes (UTIME_NOW as 'now'), attributes reach the reply scratch as seconds and
// nanoseconds (times before 1970 too), and every request is counted in flight until answered once.
import test from 'ava';
import { A, F, FIELD_COUNT, SECONDS_SENT_MAX, SET } from '../../fs/fuse/fuse3-abi';
import { changesOf } from '../../fs/fuse/fuse3-ops';
import { Replier } from '../../fs/fuse/fuse3-reply';
import type { Fuse3Native, Session } from '../../fs/fuse/fuse3-native';
import type { Stat } from '../../fs/types';

function row(fields: Partial<Record<keyof typeof F, number>>): Float64Array {
  const r = new Float64Array(FIELD_COUNT);
  for (const [k, v] of Object.entries(fields)) r[F[k as keyof typeof F]] = v;
  return r;
}

test('setattr rows: each to_set bit gives one change; ATIME_NOW/MTIME_NOW are now; nanoseconds kept', (t) => {
  const rows = row({
    toSet: SET.mode | SET.uid | SET.size | SET.atime | SET.atimeNow | SET.mtime,
    mode: 0o100600,
    attrUid: 7,
    attrGid: 9,
    size: 123,
    mtimeS: 1234567890,
    mtimeNs: 123456789,
  });
  t.deepEqual(changesOf({ rows, names: [], bufs: [] }, 0), {
    mode: 0o100600,
    uid: 7,
    sizeBytes: 123,
    atime: 'now',
    mtime: 1234567890123456789n,
  });
  t.deepEqual(
    changesOf({ rows: row({ toSet: SET.gid | SET.ctime, attrGid: 9, ctimeS: 5, ctimeNs: 6 }), names: [], bufs: [] }, 0),
    { gid: 9, ctimeNs: 5_000_000_006n },
  );
  t.deepEqual(changesOf({ rows: row({ toSet: 0 }), names: [], bufs: [] }, 0), {});
});

function fakeNative(calls: string[]): Fuse3Native {
  const answer =
    (name: string) =>
    (s: Session, id: number): number => {
      calls.push(`${name} ${id}`);
      return 0;
    };
  return {
    replyErr: (s: Session, id: number, errno: number) => {
      calls.push(`err ${id} ${errno}`);
      return 0;
    },
    replyAttr: answer('attr'),
    replyEntry: () => {
      throw new TypeError('bad arguments');
    },
  } as unknown as Fuse3Native;
}

const STAT: Stat = {
  ino: 5,
  generation: 3,
  mode: 0o100644,
  nlink: 1,
  uid: 0,
  gid: 0,
  rdev: 0,
  sizeBytes: 10,
  blocks: 1,
  blksizeBytes: 4096,
  atimeNs: -1_500_000_000n,
  mtimeNs: 1_700_000_000_000_000_001n,
  ctimeNs: 0n,
};

test('attributes reach the scratch as seconds + nanoseconds; before 1970 the seconds round down', (t) => {
  const calls: string[] = [];
  const scratch = new Float64Array(64);
  const r = new Replier(fakeNative(calls), {} as Session, scratch, { attrS: 1, entryS: 2 });
  r.delivered(11);
  r.attr(11, STAT);
  t.deepEqual(calls, ['attr 11']);
  t.is(scratch[A.atimeS], -2);
  t.is(scratch[A.atimeNs], 500_000_000);
  t.is(scratch[A.mtimeS], 1_700_000_000);
  t.is(scratch[A.mtimeNs], 1);
  t.is(scratch[A.attrTimeout], 1);
  t.is(scratch[A.entryTimeout], 2);
  t.is(scratch[A.generation], 3);
});

test('times beyond 2^53 s cross exactly: the seconds the double loses ride in the nanoseconds field', (t) => {
  const NS = 1_000_000_000n;
  const times = [67767976233532799n * NS + 999_999_999n, (2n ** 63n - 1n) * NS + 999_999_999n, -(2n ** 63n) * NS];
  for (const timeNs of times) {
    const scratch = new Float64Array(64);
    const r = new Replier(fakeNative([]), {} as Session, scratch, { attrS: 1, entryS: 1 });
    r.delivered(1);
    r.attr(1, { ...STAT, mtimeNs: timeNs });
    t.true(scratch[A.mtimeS] <= SECONDS_SENT_MAX);
    t.true(Number.isSafeInteger(scratch[A.mtimeNs]));
    t.is(BigInt(scratch[A.mtimeS]) * NS + BigInt(scratch[A.mtimeNs]), timeNs);
    // The same two fields in a setattr row come back as the same time.
    const rows = row({ toSet: SET.mtime, mtimeS: scratch[A.mtimeS], mtimeNs: scratch[A.mtimeNs] });
    t.deepEqual(changesOf({ rows, names: [], bufs: [] }, 0), { mtime: timeNs });
  }
});

test('a request is in flight from delivery to its one answer, even when the reply call throws', async (t) => {
  const calls: string[] = [];
  const r = new Replier(fakeNative(calls), {} as Session, new Float64Array(64), { attrS: 1, entryS: 1 });
  r.delivered(1);
  r.delivered(2);
  t.is(r.inFlight, 2);
  let drained = false;
  const done = r.whenDrained().then(() => {
    drained = true;
  });
  t.throws(() => r.entry(1, STAT), { instanceOf: TypeError });
  t.is(r.inFlight, 1, 'the binding answered EIO itself when its arguments were bad');
  r.err(2, 2);
  await done;
  t.true(drained);
  t.is(r.inFlight, 0);
  t.deepEqual(calls, ['err 2 2']);
});
