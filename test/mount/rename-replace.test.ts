// Replace by rename without fsync (fs/ops-names.ts storeBeforeReplace, like ext4's auto_da_alloc):
// write a new version beside the file, close it, rename it over the old one. Editors, package
// managers and build tools do this, not all of them fsync, and a crash right after the rename used
// to leave the name empty: the rename committed at once, the closed file's bytes 20 ms later with
// its close batch. Now the rename stores them first, so after a kill -9 each name holds its new
// bytes, or its old ones when the kill took the rename with the last group of metadata operations
// (never an empty name). Small files (needles) and files with chunks of their own, on both transports.
import test from 'ava';
import { promises as fsp } from 'node:fs';
import { storeFixture, sh, shOk } from '../helpers/mount';

const fixture = storeFixture(test, 'rename-replace');
const FILES = 24;

/** The new version of file i: small (a needle) for even i, 200 KB (chunks of its own) for odd. */
function newBytes(i: number): Buffer {
  const size = i % 2 === 0 ? 3000 + i : 200_000 + i;
  return Buffer.alloc(size, `new version ${i};`);
}

test.serial(
  'a file renamed over another right after close holds its new bytes after a kill -9 of the mount, or its old with every later one',
  async (t) => {
    const mnt = fixture.mountpoint;
    const m = await fixture.mount();
    await shOk(`for i in $(seq 0 ${FILES - 1}); do echo old $i > ${mnt}/f$i; done && sync -f ${mnt}/f0`);
    const local = fixture.dir + '/versions';
    await fsp.mkdir(local);
    for (let i = 0; i < FILES; i++) await fsp.writeFile(`${local}/f${i}`, newBytes(i));
    // cp then mv, back to back, as a replacing tool does; the mount is killed as soon as the last mv returns.
    await shOk(
      `for i in $(seq 0 ${FILES - 1}); do cp ${local}/f$i ${mnt}/.f$i.tmp && mv ${mnt}/.f$i.tmp ${mnt}/f$i; done`,
    );
    await m.kill9();
    const again = await fixture.mount();
    // The kill may take the last group of metadata operations (DESIGN §5 "Group commit"), whole and
    // only the last: the renames it kept are a prefix, each of them with its new bytes; a name whose
    // rename was lost holds its old bytes, and every later one too.
    let kept = 0;
    while (kept < FILES && (await sh(`cmp ${local}/f${kept} ${mnt}/f${kept}`)).code === 0) kept++;
    t.log(`renames kept by the kill -9: ${kept} of ${FILES}`);
    for (let i = kept; i < FILES; i++) t.is(await shOk(`cat ${mnt}/f${i}`), `old ${i}\n`, `f${i}: old or new bytes`);
    const left = (await shOk(`ls -a ${mnt}`)).split('\n').filter((n) => n.endsWith('.tmp'));
    t.true(
      left.every((n) => Number(/^\.f(\d+)\.tmp$/.exec(n)?.[1]) >= kept),
      `temporary names left only of renames lost: ${left.join(' ')}`,
    );
    await again.stop();
  },
);
