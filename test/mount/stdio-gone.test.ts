// A mount whose standard output and error went away (the terminal or the harness that started it
// closed its pipes) keeps serving, and on SIGTERM still flushes, unmounts and exits by itself
// (cli/stdio.ts). Before, its first log line after the pipes closed raised EPIPE, whose handler
// logged to stderr again: the process spun at 100% CPU and never unmounted.
import test from 'ava';
import * as path from 'node:path';
import { storeFixture, shOk, isMounted } from '../helpers/mount';

const fixture = storeFixture(test, 'stdio-gone');
const EXIT_WAIT_MS = 30_000;

test.serial(
  'stdout and stderr closed under a live mount: it serves, and SIGTERM still stores, unmounts and exits 0',
  async (t) => {
    const m = await fixture.mount();
    const exited = new Promise<number | null>((resolve) => m.child.on('exit', (code) => resolve(code)));
    m.child.stdout!.destroy();
    m.child.stderr!.destroy();
    const f = path.join(m.mountpoint, 'after-pipes-closed.bin');
    await shOk(
      `head -c 3000000 /dev/urandom > /tmp/stdio-gone.src && cp /tmp/stdio-gone.src ${f} && cmp /tmp/stdio-gone.src ${f}`,
    );
    m.child.kill('SIGTERM'); // it logs "flushing, unmounting ..." to the closed stderr first
    const timer = new Promise<string>((resolve) => setTimeout(() => resolve('still running'), EXIT_WAIT_MS).unref());
    t.is(await Promise.race([exited, timer]), 0, 'the mount exits by itself, with 0');
    t.false(isMounted(m.mountpoint), 'and left no mount');
    const again = await fixture.mount();
    await shOk(
      `cmp /tmp/stdio-gone.src ${path.join(again.mountpoint, 'after-pipes-closed.bin')} && rm -f /tmp/stdio-gone.src`,
    );
    t.pass('the file written after the pipes closed reads back whole after a remount');
  },
);
