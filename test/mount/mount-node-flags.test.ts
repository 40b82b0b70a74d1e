// The node flags a mount runs with (cli/mount-node-flags.ts, DESIGN §5 "Where an fsync'd 4 KiB
// write's CPU goes"): `chunkfs mount` as users start it (bin/chunkfs) runs node with them, and so
// does the mount(8) helper (test/mount/mount-helper.test.ts). V8 takes them only at start-up.
import test from 'ava';
import { promises as fsp, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { storeFixture, startMount, transportArgs } from '../helpers/mount';
import { REPO_ROOT } from '../helpers/root';
import { MOUNT_NODE_FLAGS } from '../../cli/mount-node-flags';

const LAUNCHER = path.join(REPO_ROOT, 'bin', 'chunkfs');

/** The arguments of process pid's command line. */
function commandLine(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    .split('\0')
    .filter((a) => a !== '');
}

const fixture = storeFixture(test, 'node-flags');

test.serial("bin/chunkfs's first line names the mount's node flags", async (t) => {
  const first = (await fsp.readFile(LAUNCHER, 'utf8')).split('\n')[0];
  t.is(first, `#!/usr/bin/env -S node ${MOUNT_NODE_FLAGS.join(' ')}`);
});

test.serial('a mount started by bin/chunkfs runs node with them; an fsync of a 4 KiB overwrite holds', async (t) => {
  const m = fixture.track(
    await startMount({
      command: LAUNCHER,
      args: ['mount', fixture.store, fixture.mountpoint, ...transportArgs()],
      mountpoint: fixture.mountpoint,
      readyPattern: /^chunkfs: mounted /,
    }),
  );
  const pid = m.child.pid!;
  const args = commandLine(pid);
  t.true(path.basename(args[0]).startsWith('node'), `the launcher execs node: ${args.join(' ')}`);
  for (const flag of MOUNT_NODE_FLAGS) t.true(args.includes(flag), `${flag} in ${args.join(' ')}`);
  const file = path.join(fixture.mountpoint, 'f');
  await fsp.writeFile(file, Buffer.alloc(64 << 10, 1));
  const h = await fsp.open(file, 'r+');
  try {
    await h.write(Buffer.alloc(4096, 2), 0, 4096, 8192);
    await h.sync();
  } finally {
    await h.close();
  }
  const back = await fsp.readFile(file);
  t.is(back.length, 64 << 10);
  t.true(back.subarray(8192, 12288).every((b) => b === 2));
  t.true(back.subarray(0, 8192).every((b) => b === 1) && back.subarray(12288).every((b) => b === 1));
  await m.stop();
});
