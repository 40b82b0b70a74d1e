// fs/ops-attr.ts modeAfterChown: Linux chown(2) rules for set-id bits (issue 15 item 8).
import test from 'ava';
import { modeAfterChown } from '../../fs/ops-attr';

test('chown clears set-user-ID always and set-group-ID only with group-execute', (t) => {
  t.is(modeAfterChown(0o102644), 0o2644); // S_ISGID without group-exec marks mandatory locking: kept
  t.is(modeAfterChown(0o106755), 0o0755);
  t.is(modeAfterChown(0o104644), 0o0644);
  t.is(modeAfterChown(0o102654), 0o0654);
  t.is(modeAfterChown(0o101777), 0o1777); // sticky stays
});
