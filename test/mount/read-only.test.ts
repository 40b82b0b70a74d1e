// mount -o ro: reads work, every change is refused with EROFS and changes nothing; the
// mount says it is read-only; with -o debug a failed read is logged with its whole stack.
import test from 'ava';
import { sharedMount, CLI_JS, run, sh, shOk } from '../helpers/mount';

const shared = sharedMount(test, 'ro');
const cli = (args: string[]) => run(process.execPath, [CLI_JS, ...args], { timeoutMs: 60_000 });
const LISTING = `find . -printf '%p %M %s %T@\\n' | LC_ALL=C sort; find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum`;

test.serial.before(async () => {
  await shOk(`cd ${shared.dir}/mnt && mkdir d && head -c 300000 /dev/urandom > f && echo hi > d/small`);
  await shared.remount(['-o', 'ro,debug']);
});

test.serial('reads work; every change is refused with EROFS and changes nothing', async (t) => {
  t.regex(shared.mount.readyLine, /\(pid \d+, transport [\w-]+, read-only\)$/);
  const before = await shOk(`cd ${shared.dir}/mnt && ${LISTING}`);
  t.is((await shOk(`cat ${shared.dir}/mnt/d/small`)).trim(), 'hi');
  const changes = [
    'touch new',
    'echo more >> f',
    'truncate -s 0 f',
    'mkdir e',
    'rm f',
    'mv f g',
    'chmod 600 f',
    'ln f hard',
    'ln -s f soft',
    'setfattr -n user.x -v 1 f',
    'rmdir d',
    'mknod p p',
  ];
  for (const c of changes) {
    const r = await sh(`cd ${shared.dir}/mnt && ${c}`);
    t.not(r.code, 0, c);
    t.regex(r.stderr, /Read-only file system/, c);
  }
  t.is(await shOk(`cd ${shared.dir}/mnt && ${LISTING}`), before);
  const st = JSON.parse((await cli(['status', `${shared.dir}/mnt`, '--json'])).stdout);
  t.true(st.mount.readOnly);
  t.regex((await cli(['status', `${shared.dir}/mnt`])).stdout, /, read-only\)/);
});

test.serial('-o debug: an unrecoverable read is logged with its stack', async (t) => {
  for (const shard of ['0', '1', '2']) {
    const r = await cli(['inject', 'corrupt', `${shared.dir}/mnt/f`, '--shard', shard]);
    t.is(r.code, 0, r.stderr);
  }
  const r = await run('cat', [`${shared.dir}/mnt/f`]);
  t.regex(r.stderr, /Input\/output error/);
  t.regex(shared.mount.output(), /chunkfs: read \/f: UnrecoverableError: .*\n\s+at /);
});
