// Device flushes and metadata commits of ec:4+2 writes with transaction groups on (DESIGN §5), for
// this build and an older checkout: a sequential write, and fsync'd random 4 KiB writes whose
// chunks the applier rewrites (EC: copy-on-write). Run by scripts/bench/bench-ec-flushes.sh under
// strace, which counts every fsync and fdatasync; this process counts the outermost metadata
// transactions (commits) and the metadata flushes. The counts are exact, not timings.
// Usage: node dist/scripts/bench/ec-rewrite-flushes.js <repo> <store-dir> <seq|fsync-random|base-empty|base-file> <MiB|writes>
import * as path from 'node:path';

const COUNT_MAX = 1_000_000;
const FILE_BYTES = 64 << 20;
const WRITE_BYTES = 4096;
const SEQ_WRITE_BYTES = 1 << 20;
const CHUNK_BYTES = 4 << 20;

interface StoreLike {
  ns: { create(p: number, n: string, mode: number, uid: number, gid: number): { ino: number } };
  write(ino: number, off: number, data: Buffer): Promise<void>;
  sync(ino?: number): Promise<void>;
  startGroups(): void;
  applyNow(): Promise<void>;
  close(): Promise<void>;
}

interface Internals {
  env: {
    db: { commitObserver: ((ns: bigint) => void) | null };
    commits: { flushCount: number };
    groups: { closeCount: number };
  };
}

function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

async function main(): Promise<void> {
  const [repo, dir, op, countText] = process.argv.slice(2);
  const count = Number(countText);
  if (
    !['seq', 'fsync-random', 'base-empty', 'base-file'].includes(op) ||
    !Number.isSafeInteger(count) ||
    count < 0 ||
    count > COUNT_MAX
  )
    throw new Error(
      `usage: ec-rewrite-flushes <repo> <store-dir> <seq|fsync-random|base-empty|base-file> <0..${COUNT_MAX}>`,
    );
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Store } = require(path.join(path.resolve(repo), 'dist/store/store.js')) as {
    Store: { create(d: string, o: object): Promise<StoreLike> };
  };
  const s = await Store.create(dir, { disks: 6, layout: 'ec:4+2', smallFileMaxBytes: 0 });
  const env = (s as unknown as Internals).env;
  s.startGroups();
  const f = s.ns.create(1, 'f', 0o644, 0, 0);
  const random = prng(1);
  if (op === 'fsync-random' || op === 'base-file') {
    for (let at = 0; at < FILE_BYTES; at += SEQ_WRITE_BYTES) await s.write(f.ino, at, Buffer.alloc(SEQ_WRITE_BYTES, 7));
    await s.sync();
  }
  let commits = 0;
  env.db.commitObserver = () => commits++;
  const flushes0 = env.commits.flushCount;
  const groups0 = env.groups.closeCount;
  process.stdout.write('ready\n');
  if (op === 'seq') {
    // Whole 4 MiB chunks, as the mount's write-back buffer stores them.
    for (let i = 0; i < count / 4; i++) await s.write(f.ino, i * CHUNK_BYTES, Buffer.alloc(CHUNK_BYTES, i));
    await s.sync();
  } else if (op === 'fsync-random') {
    for (let i = 0; i < count; i++) {
      const at = Math.floor(random() * (FILE_BYTES / WRITE_BYTES)) * WRITE_BYTES + 512; // not block-aligned
      await s.write(f.ino, Math.min(at, FILE_BYTES - WRITE_BYTES), Buffer.alloc(WRITE_BYTES, i));
      await s.sync(f.ino);
    }
    await s.applyNow();
    await s.sync();
  }
  const line = { commits, metaFlushes: env.commits.flushCount - flushes0, groups: env.groups.closeCount - groups0 };
  process.stderr.write(`${JSON.stringify(line)}\n`);
  await s.close();
}

main().catch((err) => {
  process.stderr.write(`ec-rewrite-flushes: ${(err as Error).message}\n`);
  process.exit(1);
});
