// A file that cannot be stored (every disk refuses writes) is still removable:
// the failure goes to the writer (fsync, or the next close), while `rm` of the file succeeds and
// leaves nothing behind. Store faults are injected into the live mount (chunkfs inject).
import test from 'ava';
import { sharedMount, run, sh, CLI_JS, PYTHON } from '../helpers/mount';
import { until } from '../helpers/until';

const shared = sharedMount(test, 'unstorable');
const P = shared.path;

const WRITER = `
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b'x' * int(sys.argv[2]))
try:
    os.fsync(fd); print('fsync ok')
except OSError as e:
    print('fsync', os.strerror(e.errno))
os.close(fd)
`;

test.serial('after a failed flush the writer gets the error and rm still removes the file', async (t) => {
  for (let disk = 0; disk < 6; disk++) {
    const r = await run(process.execPath, [
      CLI_JS,
      'inject',
      'eio',
      String(disk),
      '--ops',
      'write',
      shared.mount.mountpoint,
    ]);
    t.is(r.code, 0, r.stderr);
  }
  for (const [name, size] of [
    ['small', 1000],
    ['big', 5 << 20],
  ] as Array<[string, number]>) {
    const w = await run(PYTHON, ['-c', WRITER, P(name), String(size)]);
    t.is(w.stdout.trim(), 'fsync Input/output error', `${name}: ${w.stderr}`);
    await sh(`echo more > ${P(name + '-closed')}`); // stored in the background after close: fails there
  }
  // rm once the closed files' stores failed in the background (the mount logs each), not while they run.
  for (const name of ['small-closed', 'big-closed'])
    await until(
      () => new RegExp(`flush of /${name} \\(file \\d+\\) failed`).test(shared.mount.output()),
      `failed background flush of ${name} in the mount's log`,
      () => shared.mount.output(),
    );
  const rm = await sh(`rm ${P('small')} ${P('big')} ${P('small-closed')} ${P('big-closed')}`);
  t.is(rm.code, 0, rm.stderr);
  t.is((await sh(`ls -A ${shared.mount.mountpoint}`)).stdout.trim(), '');
  const cleared = await run(process.execPath, [CLI_JS, 'inject', '--clear', shared.mount.mountpoint]);
  t.is(cleared.code, 0, cleared.stderr);
});
