// fs/fuse/slow-requests.ts and guard(): a request whose answer waits past SLOW_REQUEST_MS is named
// in the log once; answered ones (at once, later, or failed) leave nothing tracked.
import test from 'ava';
import { SlowRequests, SLOW_REQUEST_MS } from '../../fs/fuse/slow-requests';
import { guard, opLog } from '../../fs/fuse/guard';

test('a request waiting past the bound is named once; an answered one is forgotten', (t) => {
  const lines: string[] = [];
  let nowMs = 1_000;
  const slow = new SlowRequests(
    (l) => lines.push(l),
    () => nowMs,
  );
  const stuck = slow.start('FSYNC', () => 'ino 12');
  const answered = slow.start('LOOKUP', () => 'ino 1 "a"');
  slow.end(answered);
  nowMs += SLOW_REQUEST_MS - 1;
  t.is(slow.check(), 0);
  nowMs += 1;
  t.is(slow.check(), 1);
  t.deepEqual(lines, [`FSYNC ino 12: no answer after ${SLOW_REQUEST_MS / 1000} s (still waiting)`]);
  nowMs += SLOW_REQUEST_MS;
  t.is(slow.check(), 0, 'named once');
  t.is(slow.waitingCount, 1);
  slow.end(stuck);
  t.is(slow.waitingCount, 0);
});

test('many slow requests: a few named, the rest counted in one line', (t) => {
  const lines: string[] = [];
  let nowMs = 0;
  const slow = new SlowRequests(
    (l) => lines.push(l),
    () => nowMs,
  );
  for (let i = 0; i < 20; i++) slow.start('READ', () => `ino ${i}`);
  nowMs = SLOW_REQUEST_MS;
  t.is(slow.check(), 20);
  t.is(lines.length, 9);
  t.regex(lines[8], /^12 more requests without an answer/);
  for (let i = 1; i <= 20; i++) slow.end(i);
});

test('guard tracks an op while its promise waits, and stops when it settles either way', async (t) => {
  const log = opLog(() => {}, false);
  let release!: () => void;
  const waiting = new Promise<number>((resolve) => {
    release = () => resolve(7);
  });
  const answers: string[] = [];
  guard(
    log,
    'FSYNC',
    'ino 3',
    () => waiting,
    (v) => answers.push(`ok ${v}`),
    (e) => answers.push(`err ${e}`),
  );
  guard(
    log,
    'READ',
    'ino 4',
    () => Promise.reject(new Error('boom')),
    (v) => answers.push(`ok ${String(v)}`),
    (e) => answers.push(`err ${e}`),
  );
  guard(
    log,
    'GETATTR',
    'ino 5',
    () => 1,
    (v) => answers.push(`ok ${v}`),
    (e) => answers.push(`err ${e}`),
  );
  t.is(log.slow.waitingCount, 2, 'the two promises, not the op answered at once');
  release();
  await new Promise((r) => setImmediate(r));
  t.is(log.slow.waitingCount, 0);
  t.deepEqual(answers.sort(), ['err -5', 'ok 1', 'ok 7']);
});
