// Store benchmark (DESIGN §5): write then read SIZE bytes sequentially through the
// store API for replica:3 and ec:4+2, against a plain file on the same disk in the
// same run (ratios), plus random 4 KiB overwrites/s on a replica:3 file.
// Usage: npm run bench:store [-- --mib 1024 --dir /path --rounds 3 --random-reads 20000 --only-random-reads]
// Reads are repeated --rounds times (each: drop caches, cold pass, cached pass) and
// the median is reported: the machine is shared and single passes swing 2-3x.
// Two plain baselines: one reused buffer (like cat/dd), and a fresh buffer per 4 MiB
// read, which is what the store API must return (the caller owns it); in this VM
// the fresh buffer alone costs a plain reader 2-4x (page faults on new memory).
// Random 4 KiB reads (cached data): store.read and store.readInto (pooled scratch, the
// mount's path) per op, as ratios to a plain 4 KiB pread into a reused buffer of a
// same-size plain file, interleaved in the same run (median of --rounds).
// Shard fsyncs run on libuv's thread pool; the default 4 threads serialize them.
process.env.UV_THREADPOOL_SIZE = process.env.UV_THREADPOOL_SIZE ?? '16';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execSync } from 'node:child_process';
import { Store } from '../../store/store';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const MIB = 1 << 20;
const TOTAL_MIB = Number(arg('mib', '1024'));
const WRITE_MIB = Number(arg('write-mib', '16')); // bytes per store.write call (the mount's write-back buffer flushes whole chunks)
const READ_MIB = 4; // bytes per store.read call: one default chunk, as the mount's readahead would ask
const ROOT = arg('dir', fs.mkdtempSync(path.join(os.tmpdir(), 'chunkfs-bench-')));
const RANDOM_OPS = Number(arg('random-ops', '2000'));
const ROUNDS = Math.max(1, Number(arg('rounds', '3')));
const RANDOM_READS = Number(arg('random-reads', '20000'));
const ONLY_RANDOM_READS = process.argv.includes('--only-random-reads'); // skip the sequential and overwrite parts

let dropsWork = true;
function dropCaches(): void {
  try {
    // Dirty pages cannot be dropped: sync first. 3 = page cache + dentries/inodes, so
    // the store's per-chunk file opens are cold too, like the plain file's one open.
    // In a VM this empties the guest cache only; the host may still cache the disk.
    execSync('sync');
    fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
  } catch {
    dropsWork = false; // not root / not Linux: "cold" reads come from the page cache for both sides alike
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Median cold (after dropCaches) and cached rates of ROUNDS x (open, pass, pass). */
async function readRounds(
  open: () => Promise<{ pass(): Promise<void>; close(): Promise<void> }>,
): Promise<{ read: number; warm: number }> {
  const cold: number[] = [];
  const warm: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    dropCaches();
    const h = await open();
    cold.push((TOTAL_MIB * MIB) / (await timed(() => h.pass())));
    warm.push((TOTAL_MIB * MIB) / (await timed(() => h.pass())));
    await h.close();
  }
  return { read: median(cold), warm: median(warm) };
}

function payload(): Buffer {
  const b = Buffer.allocUnsafe(WRITE_MIB * MIB);
  for (let i = 0; i < b.length; i += 4) b.writeUInt32LE((i * 2654435761) >>> 0, i);
  return b;
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

async function plain(buf: Buffer): Promise<PlainRates> {
  const file = path.join(ROOT, 'plain.bin');
  const fh = await fs.promises.open(file, 'w');
  const write = await timed(async () => {
    for (let off = 0; off < TOTAL_MIB * MIB; off += buf.length) await fh.write(buf, 0, buf.length, off);
    await fh.sync(); // durable, like the store's
  });
  await fh.close();
  const rb = Buffer.allocUnsafe(READ_MIB * MIB);
  const reader = (fresh: boolean) => async () => {
    const rh = await fs.promises.open(file, 'r');
    return {
      pass: async () => {
        for (let off = 0; off < TOTAL_MIB * MIB; off += rb.length) {
          const b = fresh ? Buffer.allocUnsafe(READ_MIB * MIB) : rb;
          await rh.read(b, 0, b.length, off);
        }
      },
      close: () => rh.close(),
    };
  };
  const reused = await readRounds(reader(false));
  const fresh = await readRounds(reader(true));
  fs.rmSync(file);
  return { write: (TOTAL_MIB * MIB) / write, ...reused, freshRead: fresh.read, freshWarm: fresh.warm };
}

interface Rates {
  write: number;
  read: number; // data not in the page cache
  warm: number; // data in the page cache: verification cost only
}

interface PlainRates extends Rates {
  freshRead: number; // a new buffer per read, as the store API returns
  freshWarm: number;
}

async function store(layout: string, buf: Buffer): Promise<Rates> {
  const dir = path.join(ROOT, `store-${layout.replace(/[:+]/g, '_')}`);
  const s = await Store.create(dir, { disks: 6, layout });
  const f = s.ns.create(1, 'bench', 0o644, 0, 0);
  const write = await timed(async () => {
    for (let off = 0; off < TOTAL_MIB * MIB; off += buf.length) await s.write(f.ino, off, buf);
  });
  await s.close();
  let check = 0;
  const { read, warm } = await readRounds(async () => {
    const r = await Store.open(dir);
    return {
      pass: async () => {
        for (let off = 0; off < TOTAL_MIB * MIB; off += READ_MIB * MIB) {
          const got = await r.read(f.ino, off, READ_MIB * MIB);
          check ^= got[got.length - 1];
        }
      },
      close: () => r.close(),
    };
  });
  if (check === 0.5) console.log(check); // keep the reads observable
  fs.rmSync(dir, { recursive: true, force: true });
  return { write: (TOTAL_MIB * MIB) / write, read, warm };
}

async function randomOverwrites(): Promise<number> {
  const dir = path.join(ROOT, 'store-random');
  const s = await Store.create(dir, { disks: 6, layout: 'replica:3' });
  const f = s.ns.create(1, 'rand', 0o644, 0, 0);
  const fileMib = 64;
  const buf = payload();
  for (let off = 0; off < fileMib * MIB; off += buf.length) await s.write(f.ino, off, buf);
  const block = Buffer.alloc(4096, 7);
  let x = 12345;
  const secs = await timed(async () => {
    for (let i = 0; i < RANDOM_OPS; i++) {
      x = (x * 1103515245 + 12345) >>> 0;
      await s.write(f.ino, (x % ((fileMib * MIB) / 4096)) * 4096, block);
    }
  });
  await s.close();
  fs.rmSync(dir, { recursive: true, force: true });
  return RANDOM_OPS / secs;
}

interface ReadCosts {
  plainUs: number;
  readUs: number;
  intoUs: number;
}

/** Median per-op microseconds of RANDOM_READS seeded random 4 KiB reads: plain pread, store.read, store.readInto. */
async function randomReads(layout: string): Promise<ReadCosts> {
  const fileBytes = 64 * MIB;
  const dir = path.join(ROOT, `store-randread-${layout.replace(/[:+]/g, '_')}`);
  const s = await Store.create(dir, { disks: 6, layout });
  const f = s.ns.create(1, 'rand', 0o644, 0, 0);
  const buf = payload();
  const plainFile = path.join(ROOT, 'plain-randread.bin');
  const fd = fs.openSync(plainFile, 'w+');
  for (let off = 0; off < fileBytes; off += buf.length) {
    await s.write(f.ino, off, buf);
    fs.writeSync(fd, buf, 0, buf.length, off);
  }
  const offsets = Array.from(
    { length: RANDOM_READS },
    (_, i) => (((i * 2654435761) >>> 0) % (fileBytes / 4096)) * 4096,
  );
  const target = Buffer.allocUnsafe(4096);
  let check = 0;
  const perOp = async (fn: (off: number) => Promise<void> | void): Promise<number> => {
    const secs = await timed(async () => {
      for (const off of offsets) await fn(off);
    });
    return (secs * 1e6) / offsets.length;
  };
  const plainUs: number[] = [];
  const readUs: number[] = [];
  const intoUs: number[] = [];
  for (let r = 0; r <= ROUNDS; r++) {
    // round 0 warms the page cache and the store's caches
    const p = await perOp((off) => {
      fs.readSync(fd, target, 0, 4096, off);
      check ^= target[4095];
    });
    const a = await perOp(async (off) => {
      check ^= (await s.read(f.ino, off, 4096))[4095];
    });
    const b = await perOp(async (off) => {
      await s.readInto(f.ino, off, target);
      check ^= target[4095];
    });
    if (r > 0) {
      plainUs.push(p);
      readUs.push(a);
      intoUs.push(b);
    }
  }
  if (check === 0.5) console.log(check); // keep the reads observable
  fs.closeSync(fd);
  await s.close();
  fs.rmSync(plainFile);
  fs.rmSync(dir, { recursive: true, force: true });
  return { plainUs: median(plainUs), readUs: median(readUs), intoUs: median(intoUs) };
}

async function randomReadLines(): Promise<void> {
  for (const layout of ['replica:3', 'ec:4+2']) {
    const c = await randomReads(layout);
    const line = (name: string, us: number): string =>
      `${name} ${us.toFixed(1)} us/op ${(1e6 / us).toFixed(0)} ops/s (${(c.plainUs / us).toFixed(2)}x plain ops/s)`;
    console.log(
      `${layout.padEnd(14)}  random 4 KiB reads, cached, median of ${ROUNDS}: plain pread ${c.plainUs.toFixed(1)} us/op ${(1e6 / c.plainUs).toFixed(0)} ops/s  ` +
        `${line('store.read', c.readUs)}  ${line('store.readInto', c.intoUs)}`,
    );
  }
}

async function main(): Promise<void> {
  const buf = payload();
  const mbs = (v: number): string => `${(v / MIB).toFixed(0)} MiB/s`;
  if (ONLY_RANDOM_READS) {
    await randomReadLines();
    fs.rmSync(ROOT, { recursive: true, force: true });
    return;
  }
  console.log(
    `bench:store  ${TOTAL_MIB} MiB sequential, ${WRITE_MIB} MiB per call, reads ${READ_MIB} MiB per call, median of ${ROUNDS} rounds, root ${ROOT}`,
  );
  const base = await plain(buf);
  if (!dropsWork) console.log('cannot drop the page cache (not root?): "read" is cached too');
  console.log(
    `plain file      write ${mbs(base.write)}  read ${mbs(base.read)}  read cached ${mbs(base.warm)}  (one reused buffer)`,
  );
  console.log(
    `plain file      read ${mbs(base.freshRead)}  read cached ${mbs(base.freshWarm)}  (fresh buffer per read, like the store API)`,
  );
  for (const [layout, target] of [
    ['replica:3', 0.3],
    ['ec:4+2', 0.5],
  ] as const) {
    const r = await store(layout, buf);
    console.log(
      `${layout.padEnd(14)}  write ${mbs(r.write)} (${(r.write / base.write).toFixed(2)}x plain, target ${target}x)  ` +
        `read ${mbs(r.read)} (${(r.read / base.read).toFixed(2)}x plain, target 0.7x)  ` +
        `read cached ${mbs(r.warm)} (${(r.warm / base.warm).toFixed(2)}x plain cached)`,
    );
    console.log(
      `${''.padEnd(14)}  vs plain with a fresh buffer per read: read ${(r.read / base.freshRead).toFixed(2)}x, read cached ${(r.warm / base.freshWarm).toFixed(2)}x`,
    );
  }
  await randomReadLines();
  console.log(`replica:3 random 4 KiB overwrites: ${(await randomOverwrites()).toFixed(0)} /s (each durable)`);
  fs.rmSync(ROOT, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
