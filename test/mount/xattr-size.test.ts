// getxattr(2)/listxattr(2) buffer sizes on a real mount: size 0 answers the bytes
// needed, a buffer too small answers ERANGE, an exact one gets the bytes; and the mount keeps
// serving. Sizes are chosen through ctypes in the client child (os.getxattr picks its own).
import test from 'ava';
import * as path from 'node:path';
import { sharedMount, ClientOp, ClientResult, fsClient } from '../helpers/mount';

// A request the server never answers cannot be interrupted, not even by SIGKILL (the kernel waits
// it out once the server has read it). Killing the server aborts the connection and frees the client.
const HANG_GUARD_MS = 20_000;
const VALUE = 'hello';

const shared = sharedMount(test, 'xattrsize');
const P = (rel: string): string => path.join(shared.mount.mountpoint, rel);

/** Runs the ops in one client; if the server has not answered them by HANG_GUARD_MS, it is killed. */
async function clientOrKillServer(ops: ClientOp[]): Promise<ClientResult[]> {
  const guard = setTimeout(() => {
    void shared.mount.kill9();
  }, HANG_GUARD_MS);
  try {
    return await fsClient(ops, { timeoutMs: 2 * HANG_GUARD_MS });
  } finally {
    clearTimeout(guard);
  }
}

function outcome(r: ClientResult): unknown {
  return r.err ?? r.ok;
}

test.serial('getxattr: size 0 gives the length, a short buffer ERANGE, an exact one the value', async (t) => {
  const f = P('g');
  const r = await clientOrKillServer([
    ['writefile', f, 'data'],
    ['setxattr', f, 'user.a', VALUE],
    ['getxattr_sized', f, 'user.a', 0],
    ['getxattr_sized', f, 'user.a', 1],
    ['getxattr_sized', f, 'user.a', VALUE.length - 1],
    ['getxattr_sized', f, 'user.a', VALUE.length],
    ['getxattr_sized', f, 'user.a', 4 * VALUE.length],
    ['getxattr_sized', f, 'user.missing', 0],
    ['stat', f],
  ]);
  t.deepEqual(
    r.slice(2, 8).map(outcome),
    [VALUE.length, 'ERANGE', 'ERANGE', VALUE, VALUE, 'ENODATA'],
    shared.mount.output(),
  );
  t.is(r[8].ok?.size, 4);
});

test.serial('listxattr: size 0 gives the exact length, a short buffer ERANGE, an exact one the names', async (t) => {
  const f = P('l');
  const r = await clientOrKillServer([
    ['writefile', f, 'data'],
    ['setxattr', f, 'user.a', VALUE],
    ['setxattr', f, 'user.second', 'x'],
    ['listxattr', f],
    ['listxattr_sized', f, 0],
    ['listxattr_sized', f, 1],
    ['stat', f],
  ]);
  const names = r[3].ok as string[];
  t.true(names.includes('user.a') && names.includes('user.second'), JSON.stringify(r));
  const neededBytes = names.reduce((n, name) => n + Buffer.byteLength(name) + 1, 0);
  t.deepEqual(r.slice(4, 6).map(outcome), [neededBytes, 'ERANGE'], shared.mount.output());
  t.is(r[6].ok?.size, 4);
  const exact = await clientOrKillServer([
    ['listxattr_sized', f, neededBytes],
    ['listxattr_sized', f, neededBytes - 1],
  ]);
  const list = String(exact[0].ok);
  t.true(list.endsWith('\0'), JSON.stringify(list));
  t.deepEqual(list.slice(0, -1).split('\0').sort(), names); // the client sorts its own listing
  t.is(outcome(exact[1]), 'ERANGE');
});
