// fs/set-id.ts: Linux rules for set-id bits on chown, on a write, truncate or
// fallocate by a user and on a mode that user sets (filesystem.md, POSIX details).
import test from 'ava';
import { modeAfterChown, modeAfterWrite, modeSetBy } from '../../fs/set-id';

test('chown clears set-user-ID always and set-group-ID only with group-execute', (t) => {
  t.is(modeAfterChown(0o102644), 0o2644); // S_ISGID without group-exec marks mandatory locking: kept
  t.is(modeAfterChown(0o106755), 0o0755);
  t.is(modeAfterChown(0o104644), 0o0644);
  t.is(modeAfterChown(0o102654), 0o0654);
  t.is(modeAfterChown(0o101777), 0o1777); // sticky stays
});

// pid 0: no /proc entry, so only the caller's own gid counts as its group.
const nobody = { uid: 65534, gid: 65534, pid: 0, umask: 0 };
const root = { uid: 0, gid: 0, pid: 0, umask: 0 };

test('a write by a user without CAP_FSETID drops set-user-ID, and set-group-ID with group-exec or outside the group', (t) => {
  t.is(modeAfterWrite(0o106666, 0, nobody), 0o0666);
  t.is(modeAfterWrite(0o102666, 0, nobody), 0o0666);
  t.is(modeAfterWrite(0o106666, 65534, nobody), 0o2666); // in the group, no group-exec: kept
  t.is(modeAfterWrite(0o102676, 65534, nobody), 0o0676);
  t.is(modeAfterWrite(0o106777, 0, root), 0o6777);
  t.is(modeAfterWrite(0o100644, 0, nobody), 0o0644);
});

test('a mode set by a user outside the group loses set-group-ID (chmod, an access ACL)', (t) => {
  t.is(modeSetBy(0o2777, 0, nobody), 0o0777);
  t.is(modeSetBy(0o2777, 65534, nobody), 0o2777);
  t.is(modeSetBy(0o6777, 0, root), 0o6777);
  t.is(modeSetBy(0o4755, 0, nobody), 0o4755);
});
