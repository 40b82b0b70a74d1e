// Device flushes per operation (DESIGN §5), for the README: run one kind of operation N times on a fresh
// store, in a process that scripts/bench/bench-flushes.sh traces with strace (fsync + fdatasync from every
// source: shard files, directories and SQLite's own). The store code is loaded from a checkout given on
// the command line, so the same script measures an older build (before) and this one (after).
// Usage: node dist/scripts/bench/flush-counts.js <repo> <store-dir> <op> <count>
import * as path from 'node:path';

const OPS = [
  'none',
  'create',
  'mkdir',
  'rename',
  'chmod',
  'setxattr',
  'unlink',
  'write4k-fsync',
  'append4m-fsync',
  'rm-3chunks',
] as const;
type Op = (typeof OPS)[number];
const COUNT_MAX = 100_000;

interface StoreLike {
  ns: {
    create(p: number, n: string, mode: number, uid: number, gid: number): { ino: number };
    mkdir(p: number, n: string, mode: number, uid: number, gid: number): { ino: number };
    rename(p: number, n: string, np: number, nn: string): unknown;
    setattr(ino: number, v: { mode: number }): unknown;
    setxattr(ino: number, name: string, value: Buffer): void;
    unlink(p: number, n: string): unknown;
  };
  write(ino: number, off: number, data: Buffer): Promise<void>;
  deleteFile(ino: number): Promise<void>;
  sync?(): Promise<void>;
  close(): Promise<void>;
}

async function main(): Promise<void> {
  const [repo, dir, op, countText] = process.argv.slice(2);
  const count = Number(countText);
  if (!OPS.includes(op as Op) || !Number.isSafeInteger(count) || count < 0 || count > COUNT_MAX) {
    throw new Error(`usage: flush-counts <repo> <store-dir> <${OPS.join('|')}> <count 0..${COUNT_MAX}>`);
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Store } = require(path.join(path.resolve(repo), 'dist/store/store.js')) as {
    Store: { create(d: string, o: object): Promise<StoreLike> };
  };
  const s = await Store.create(dir, { disks: 6, layout: 'replica:3' });
  const fsync = async (): Promise<void> => {
    if (s.sync !== undefined) await s.sync();
  }; // older builds: durable at once
  const big = s.ns.create(1, 'big', 0o644, 0, 0);
  await s.write(big.ino, 0, Buffer.alloc(4 << 20, 1));
  await fsync();
  process.stdout.write('ready\n');
  // The trace starts counting here: scripts/bench/bench-flushes.sh subtracts the 'none' run.
  for (let i = 0; i < count; i++) await one(s, op as Op, i, big.ino, fsync);
  await s.close();
}

async function one(s: StoreLike, op: Op, i: number, bigIno: number, fsync: () => Promise<void>): Promise<void> {
  switch (op) {
    case 'none':
      return;
    case 'create':
      s.ns.create(1, `f${i}`, 0o644, 0, 0);
      return;
    case 'mkdir':
      s.ns.mkdir(1, `d${i}`, 0o755, 0, 0);
      return;
    case 'rename': {
      s.ns.create(1, `r${i}`, 0o644, 0, 0);
      s.ns.rename(1, `r${i}`, 1, `R${i}`);
      return;
    }
    case 'chmod':
      s.ns.setattr(bigIno, { mode: 0o600 + (i % 2) });
      return;
    case 'setxattr':
      s.ns.setxattr(bigIno, 'user.n', Buffer.from(String(i)));
      return;
    case 'unlink': {
      const f = s.ns.create(1, `u${i}`, 0o644, 0, 0);
      s.ns.unlink(1, `u${i}`);
      await s.deleteFile(f.ino);
      return;
    }
    case 'write4k-fsync':
      await s.write(bigIno, ((i * 7919) % 1000) * 4096, Buffer.alloc(4096, i));
      await fsync();
      return;
    case 'append4m-fsync':
      await s.write(bigIno, (4 << 20) * (i + 1), Buffer.alloc(4 << 20, i));
      await fsync();
      return;
    case 'rm-3chunks': {
      const f = s.ns.create(1, `x${i}`, 0o644, 0, 0);
      await s.write(f.ino, 0, Buffer.alloc(12 << 20, i));
      await fsync();
      s.ns.unlink(1, `x${i}`);
      await s.deleteFile(f.ino);
      return;
    }
  }
}

main().catch((err) => {
  process.stderr.write(`flush-counts: ${(err as Error).message}\n`);
  process.exit(1);
});
