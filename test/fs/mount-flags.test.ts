// The set-id and device mount flags a mount gets (fs/mount-flags.ts; filesystem.md, Mounted by root): root gets
// suid,dev unless it says otherwise; another user gets nosuid,nodev and cannot ask for more.
import test from 'ava';
import { remountOptions, setIdDefaults } from '../../fs/mount-flags';

test('root: suid and dev unless -o nosuid / nodev', (t) => {
  t.deepEqual(setIdDefaults({}, true), { suid: true, dev: true });
  t.deepEqual(setIdDefaults({ suid: false }, true), { suid: false, dev: true });
  t.deepEqual(setIdDefaults({ suid: false, dev: false }, true), { suid: false, dev: false });
});

test('another user: nosuid,nodev; asking for suid or dev is an error naming the option', (t) => {
  t.deepEqual(setIdDefaults({}, false), { suid: false, dev: false });
  t.deepEqual(setIdDefaults({ suid: false, dev: false }, false), { suid: false, dev: false });
  t.throws(() => setIdDefaults({ suid: true }, false), { message: /-o suid needs root/ });
  t.throws(() => setIdDefaults({ dev: true }, false), { message: /-o dev needs root/ });
});

test('the bind remount sets exactly the two flags', (t) => {
  t.is(remountOptions({ suid: true, dev: false }), 'remount,bind,suid,nodev');
  t.is(remountOptions({ suid: false, dev: true }), 'remount,bind,nosuid,dev');
});
