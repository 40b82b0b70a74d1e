// A lookup of a missing name is answered as a negative entry the kernel caches for the entry
// timeout (fs/fuse/fuse3-reply.ts missing): a build, git or a module resolver asking again and again
// for files that are not there costs one request per name, not one per ask. Every name is made
// through this kernel, which replaces its cached miss: a name made right after a miss is there.
// fuse-native (libfuse 2, path based) caches no entries at all: there every ask reaches the mount.
import test from 'ava';
import * as path from 'node:path';
import { sharedMount, shOk, TRANSPORT } from '../helpers/mount';
import { fuseLookupsDuring } from '../helpers/strace';
import { undisturbed } from '../helpers/dentry-reclaim';
import { CACHE_TIMEOUT_S } from '../../fs/fuse/fuse3';

const FUSE3 = TRANSPORT !== 'fuse-native';
const shared = sharedMount(test, 'negative');
const ASKS = 100;

test.serial(`${ASKS} stats of one missing name cost one lookup`, async (t) => {
  if (!FUSE3) {
    t.pass('fuse-native: libfuse 2 caches no entries');
    return;
  }
  await shOk(`mkdir -p ${shared.path('d')}`);
  const { n, elapsedMs } = await undisturbed(
    async (attempt) => {
      const name = `not-there-${attempt}.h`; // never asked before: its first stat is a lookup
      const missing = shared.path(`d/${name}`);
      const startMs = Date.now();
      const names = await fuseLookupsDuring(
        shared.mount.child.pid!,
        path.join(shared.dir, `${name}.trace`),
        async () => {
          await shOk(`for i in $(seq ${ASKS}); do stat ${missing} 2>/dev/null && exit 1; done; true`);
        },
      );
      return { n: names.filter((asked) => asked === name).length, elapsedMs: Date.now() - startMs };
    },
    (r) => r.n === 1,
    (line) => t.log(line),
  );
  // Without the cached miss every stat would cost one; past the entry timeout a miss is asked again.
  if (elapsedMs < CACHE_TIMEOUT_S * 1000) t.is(n, 1, `${n} lookups for ${ASKS} stats of a missing name`);
  else t.log(`${ASKS} stats took ${elapsedMs} ms, past the entry timeout: ${n} lookups not checked`);
});

test.serial('a name made right after it was looked up missing is there, by every way of making one', async (t) => {
  const d = shared.path('made');
  await shOk(`mkdir -p ${d}`);
  const ways: Array<[string, string]> = [
    ['file', `echo hi > ${d}/file`],
    ['dir', `mkdir ${d}/dir`],
    ['symlink', `ln -s target ${d}/symlink`],
    ['hardlink', `ln ${d}/file ${d}/hardlink`],
    ['renamed', `echo moved > ${d}/src && mv ${d}/src ${d}/renamed`],
    ['fifo', `mkfifo ${d}/fifo`],
  ];
  for (const [name, make] of ways) {
    await shOk(`! stat ${d}/${name} 2>/dev/null`); // the miss is cached now
    await shOk(make);
    t.is((await shOk(`ls ${d} | grep -x ${name} || true`)).trim(), name, `${name} is listed`);
    await shOk(`stat ${d}/${name} >/dev/null`);
  }
  t.is(await shOk(`cat ${d}/hardlink ${d}/renamed`), 'hi\nmoved\n');
  await shOk(`rm ${d}/file && ! stat ${d}/file 2>/dev/null && echo again > ${d}/file`);
  t.is(await shOk(`cat ${d}/file`), 'again\n', 'removed, missing, made again');
});
