// Which commits a full commit point vouches for (store/meta/postgres/instance.ts, DESIGN §9 "A broken
// connection"): only those made on its own server instance; a reconnection to the same instance (a
// terminated session, a network cut) loses nothing; to another (a restart, a fail-over) with commits
// not yet durable, they may be lost; a commit point on a new instance while the session is still on
// the old one vouches for nothing yet.
import test from 'ava';
import { CommitSpans, CommitsUnconfirmedError } from '../../../../store/meta/postgres/instance';

const T = 'postgresql:///db';

test('a reconnection to the same instance, or with every commit durable, loses nothing', (t) => {
  const s = new CommitSpans('A');
  t.false(s.reconnected(5n, 'A'), 'same instance: its WAL buffers kept every commit');
  t.is(s.confirm(7n, 'A', T), null);
  t.false(s.reconnected(7n, 'B'), 'nothing undurable when it moved');
  t.is(s.current, 'B');
  t.is(s.confirm(9n, 'B', T), null);
});

test('a reconnection to another instance with commits not yet durable: they may be lost, said once', (t) => {
  const s = new CommitSpans('A');
  t.is(s.confirm(3n, 'A', T), null);
  t.true(s.reconnected(5n, 'B'), 'commits 4 and 5 were made on A, not flushed');
  t.regex(s.confirm(6n, 'B', T) ?? '', /was A, now B/);
  t.is(s.confirm(8n, 'B', T), null, 'said once: later commits are all on B');
});

test('a commit point on a new instance while the session is still on the old one vouches for nothing', (t) => {
  const s = new CommitSpans('A');
  t.throws(() => s.confirm(4n, 'B', T), { instanceOf: CommitsUnconfirmedError, message: /not reconnected yet/ });
  t.true(s.reconnected(4n, 'B'));
  t.regex(s.confirm(4n, 'B', T) ?? '', /was A, now B/, 'still undurable: now said');
});

test('two reconnections before a full commit: every old instance is named until one vouches', (t) => {
  const s = new CommitSpans('A');
  t.true(s.reconnected(2n, 'B'));
  t.true(s.reconnected(4n, 'C'));
  t.regex(s.confirm(4n, 'C', T) ?? '', /was A, now C/);
  t.is(s.confirm(6n, 'C', T), null);
});
