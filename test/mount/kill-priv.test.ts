// FUSE_HANDLE_KILLPRIV_V2 on the libfuse3 transport (native/fuse3/kill_priv.h):
// the kernel no longer asks for security.capability before every write, and no longer fetches
// attributes before every chown (it still asks for security.capability there); set-id bits still go as Linux drops them (set-id-kill.test.ts).
// Counted from the mount's answers to /dev/fuse and its requests by opcode (strace of the mount process): a write costs one
// answer, not two. fuse-native (libfuse 2) cannot ask for the flag: there the old count stays.
import test from 'ava';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { sharedMount, run, shOk, PYTHON, TRANSPORT, NOBODY_UID } from '../helpers/mount';
import { FUSE_OPCODE, fuseAnswersDuring, fuseRequestsDuring } from '../helpers/strace';

const FUSE3 = TRANSPORT !== 'fuse-native';
const shared = sharedMount(test, 'killpriv');
const WRITES = 200;

const WRITE_MANY = `
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
for i in range(int(sys.argv[2])):
    os.write(fd, b'%07d\\n' % i)
os.close(fd)
`;

/** Answers the mount wrote to /dev/fuse while fn ran. */
async function fuseAnswers(fn: () => Promise<void>): Promise<number> {
  return await fuseAnswersDuring(shared.mount.child.pid!, path.join(shared.dir, `answers-${Date.now()}.trace`), fn);
}

test.serial(
  `${WRITES} small writes cost about one FUSE answer each (no security.capability lookup per write)`,
  async (t) => {
    if (!FUSE3) {
      t.pass('fuse-native: libfuse 2 cannot ask for FUSE_HANDLE_KILLPRIV_V2');
      return;
    }
    t.is(spawnSync('strace', ['-V']).status, 0, 'strace is needed (scripts/setup-test.sh installs it)');
    const f = shared.path('appends.txt');
    const answers = await fuseAnswers(async () => {
      const r = await run(PYTHON, ['-c', WRITE_MANY, f, String(WRITES)]);
      t.is(r.code, 0, r.stderr);
    });
    // WRITES writes, plus lookup, create, flush, release and one security.capability check for the
    // new inode; before: two answers per write (about 2 x WRITES).
    t.true(answers >= WRITES && answers < WRITES * 1.25, `${answers} answers for ${WRITES} writes`);
    const expected = Array.from({ length: WRITES }, (_, i) => String(i).padStart(7, '0')).join('\n') + '\n';
    t.is(await shOk(`cat ${f}`), expected, 'every byte reads back');
  },
);

test.serial('chown costs no attribute fetch before its setattr, and still drops set-user-ID', async (t) => {
  if (!FUSE3) {
    t.pass('fuse-native: libfuse 2 cannot ask for FUSE_HANDLE_KILLPRIV_V2');
    return;
  }
  const files = Array.from({ length: 50 }, (_, i) => shared.path(`owned-${i}`));
  await shOk(`for f in ${files.join(' ')}; do touch "$f"; chmod 4755 "$f"; done`);
  const requests = await fuseRequestsDuring(
    shared.mount.child.pid!,
    path.join(shared.dir, `chown-${Date.now()}.trace`),
    async () => {
      await shOk(`chown ${NOBODY_UID} ${files.join(' ')}`);
    },
  );
  // Per file (the names are cached from touch) a security.capability check (chown asks for it
  // whatever the flags) and the setattr; before, a getattr came between them. Counted by opcode:
  // a stray lookup on a loaded machine (a dentry the kernel let go) does not count.
  const counts = JSON.stringify([...requests]);
  t.is(requests.get(FUSE_OPCODE.setattr), files.length, `one setattr per chown: ${counts}`);
  t.true((requests.get(FUSE_OPCODE.getattr) ?? 0) < files.length / 10, `no getattr before each setattr: ${counts}`);
  t.is((await shOk(`stat -c %a:%u ${files[0]}`)).trim(), `755:${NOBODY_UID}`, 'set-user-ID goes with the owner change');
});
