// The mount's memory does not grow with what is written (DESIGN §5: it holds only the chunks still
// being filled and the write-back bound's worth): a 4 GiB file written sequentially through the
// mount, on replica:3 and on ec:4+2, keeps the mount's peak resident set (VmHWM) under
// RSS_PEAK_MAX_BYTES (350 MiB on replica:3), and reads back equal where sampled (the first and the
// last MiB of every 256 MiB).
import test from 'ava';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { storeFixture, shOk } from '../helpers/mount';

/**
 * What the mount may hold at its peak while a big file is written (README "Performance"), by
 * layout: replica:3 is the target's layout; ec:4+2 holds parity and more transient buffers, whose
 * release waits for a collection (measured: 282 MiB alone, 362 MiB beside the rest of the suite).
 * A leak that grows with the file would pass either bound within the first GiB.
 */
const RSS_PEAK_MAX_BYTES: Record<string, number> = { 'replica:3': 350 << 20, 'ec:4+2': 450 << 20 };
const FILE_BYTES = 4 * 1024 * 1024 * 1024;
/** The written file repeats this block of random bytes (no generator on the critical path). */
const BLOCK_BYTES = 64 * 1024 * 1024;
const SAMPLE_EVERY_BYTES = 256 * 1024 * 1024;
const SAMPLE_BYTES = 1024 * 1024;

const fixture = storeFixture(test, 'memory');

function peakRssBytes(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m === null) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

/** The bytes at offset of the written file: the block repeated. */
function expected(block: Buffer, offset: number, length: number): Buffer {
  const out = Buffer.alloc(length);
  for (let at = 0; at < length; ) {
    const inBlock = (offset + at) % block.length;
    const n = Math.min(length - at, block.length - inBlock);
    block.copy(out, at, inBlock, inBlock + n);
    at += n;
  }
  return out;
}

function sampledDigest(read: (offset: number) => Buffer): string {
  const h = createHash('sha256');
  for (let at = 0; at < FILE_BYTES; at += SAMPLE_EVERY_BYTES) {
    h.update(read(at));
    h.update(read(at + SAMPLE_EVERY_BYTES - SAMPLE_BYTES));
  }
  return h.digest('hex');
}

test.serial(
  'a 4 GiB file on replica:3 and on ec:4+2: peak RSS bounded (350 MiB on replica:3), sampled bytes read back',
  async (t) => {
    const m = await fixture.mount();
    const pid = Number(/\(pid (\d+)/.exec(m.readyLine)?.[1]); // the serving process, as the mount names it
    t.true(pid > 0, m.readyLine);
    const src = path.join(fixture.dir, 'block');
    await shOk(`head -c ${BLOCK_BYTES} /dev/urandom > ${src}`);
    const blockBytes = fs.readFileSync(src);
    t.is(blockBytes.length, BLOCK_BYTES);
    const copies = FILE_BYTES / BLOCK_BYTES;
    for (const layout of ['replica:3', 'ec:4+2']) {
      const dir = path.join(m.mountpoint, layout.replace(/[:+]/g, '_'));
      await shOk(`mkdir ${dir} && setfattr -n user.chunkfs.layout -v ${layout} ${dir}`);
      const file = path.join(dir, 'big');
      await shOk(
        `for i in $(seq ${copies}); do cat ${src}; done | dd of=${file} bs=1M iflag=fullblock conv=fsync status=none`,
        {
          timeoutMs: 240_000,
        },
      );
      t.is(fs.statSync(file).size, FILE_BYTES, `${layout}: the whole file`);
      const fd = fs.openSync(file, 'r');
      try {
        const got = sampledDigest((at) => {
          const b = Buffer.alloc(SAMPLE_BYTES);
          t.is(fs.readSync(fd, b, 0, SAMPLE_BYTES, at), SAMPLE_BYTES);
          return b;
        });
        t.is(
          got,
          sampledDigest((at) => expected(blockBytes, at, SAMPLE_BYTES)),
          `${layout}: sampled bytes read back`,
        );
      } finally {
        fs.closeSync(fd);
      }
      const peak = peakRssBytes(pid);
      t.log(`${layout}: mount peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB`);
      t.true(peak <= RSS_PEAK_MAX_BYTES[layout], `${layout}: peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB`);
      fs.rmSync(file); // the disks hold 12 GiB for replica:3
    }
  },
);
