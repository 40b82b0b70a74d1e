// What close(2) costs on the libfuse3 transport (fewer requests): a descriptor
// opened read-only is opened with FOPEN_NOFLUSH, so its close sends no FLUSH (nothing of it to store
// or report; the kernel keeps locks itself); a writable descriptor's close still sends one, where
// chunkfs reports a failed background flush and stores a large file before close returns.
// Counted from the requests the mount reads from /dev/fuse (strace of the mount process). fuse-native
// (libfuse 2) cannot set the flag: there every close sends a FLUSH.
import test from 'ava';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { sharedMount, run, shOk, PYTHON, TRANSPORT } from '../helpers/mount';
import { FUSE_OPCODE, fuseRequestsDuring } from '../helpers/strace';

const FUSE3 = TRANSPORT !== 'fuse-native';
const shared = sharedMount(test, 'closereq');
const FILES = 60;

/** Opens every file named on the command line with the given flags, reads it if readable, closes it. */
const OPEN_ALL = `
import os, sys
flags = {'r': os.O_RDONLY, 'rw': os.O_RDWR}[sys.argv[1]]
for p in sys.argv[2:]:
    fd = os.open(p, flags)
    data = os.read(fd, 1 << 16)
    assert data == ('%s\\n' % os.path.basename(p)).encode(), (p, data)
    os.close(fd)
`;

async function requestsOpening(mode: 'r' | 'rw', files: string[]): Promise<Map<number, number>> {
  const trace = path.join(shared.dir, `requests-${mode}-${Date.now()}.trace`);
  return await fuseRequestsDuring(shared.mount.child.pid!, trace, async () => {
    const r = await run(PYTHON, ['-c', OPEN_ALL, mode, ...files]);
    if (r.code !== 0) throw new Error(`client failed: ${r.stderr}`);
  });
}

test.serial('closing a read-only descriptor sends no FLUSH; closing a writable one does', async (t) => {
  if (!FUSE3) {
    t.pass('fuse-native: libfuse 2 cannot set FOPEN_NOFLUSH');
    return;
  }
  t.is(spawnSync('strace', ['-V']).status, 0, 'strace is needed (scripts/setup-test.sh installs it)');
  const names = Array.from({ length: FILES }, (_, i) => `f${i}`);
  await shOk(`cd ${shared.mount.mountpoint} && for f in ${names.join(' ')}; do echo "$f" > "$f"; done && sync`);
  const files = names.map((n) => shared.path(n));
  const readOnly = await requestsOpening('r', files);
  // The opens are counted too: proof that the trace saw every request of the pass.
  t.is(readOnly.get(FUSE_OPCODE.open), FILES, `requests of the read-only pass: ${JSON.stringify([...readOnly])}`);
  t.is(readOnly.get(FUSE_OPCODE.flush) ?? 0, 0, 'no FLUSH for a read-only close');
  const writable = await requestsOpening('rw', files);
  t.is(writable.get(FUSE_OPCODE.open), FILES, `requests of the read-write pass: ${JSON.stringify([...writable])}`);
  t.is(writable.get(FUSE_OPCODE.flush), FILES, "a writable descriptor's close still sends a FLUSH");
  // A writer's bytes are there for a reader right after its close, and after a remount.
  await shOk(`printf 'new bytes\\n' > ${files[0]}`);
  t.is(await shOk(`cat ${files[0]}`), 'new bytes\n');
  await shared.remount();
  t.is(await shOk(`cat ${shared.path('f1')}`), 'f1\n');
  t.is(await shOk(`cat ${shared.path('f0')}`), 'new bytes\n');
});
