// store.writeParts (DESIGN §5 "Write-back pieces"): the write-back's pieces are hashed and written
// as they lie, so the caller may reuse their memory only once the store settled; it settles only
// after every shard write that reads them ended (a slow replica included). Layouts that encode one
// buffer, and slices not of whole bitrot blocks, are refused (the caller joins them).
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseBitrotKey } from '../../../src/keying';
import { verifyShardBytes } from '../../../src/shard';
import { DISK_MARKER_FILE } from '../../../store/disk-identity';
import { Io, IoFile, NodeIo, OpenMode } from '../../../store/io/io';
import { SMALL, prng, randomBytes, smallStore } from '../helpers';

const CS = SMALL.chunkSizeBytes;

/** An Io whose first shard file created while armed has its writes held until release(). */
class HoldingIo {
  armed = false;
  held = 0;
  private releaseAll: () => void = () => undefined;
  private readonly gate = new Promise<void>((resolve) => (this.releaseAll = resolve));
  readonly io: Io;

  constructor() {
    const inner = new NodeIo();
    this.io = new Proxy(inner, {
      get: (target, prop, receiver) => {
        if (prop !== 'open') return Reflect.get(target, prop, receiver);
        return async (p: string, mode: OpenMode): Promise<IoFile> => {
          const f = await inner.open(p, mode);
          if (!this.armed || !mode.startsWith('create') || !p.includes(`${path.sep}disks${path.sep}`)) return f;
          this.armed = false;
          return this.holding(f);
        };
      },
    });
  }

  release(): void {
    this.releaseAll();
  }

  private holding(f: IoFile): IoFile {
    const hold = async (): Promise<void> => {
      this.held++;
      await this.gate;
    };
    return new Proxy(f, {
      get: (target, prop, receiver) => {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if ((prop !== 'pwrite' && prop !== 'pwritev') || typeof v !== 'function') return v;
        return async (...args: unknown[]): Promise<void> => {
          await hold();
          return (v as (...a: unknown[]) => Promise<void>).apply(target, args);
        };
      },
    });
  }
}

function shardFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name !== DISK_MARKER_FILE) out.push(p);
    }
  };
  walk(path.join(dir, 'disks'));
  return out;
}

test('replica:3: parts are written as they lie, and the store settles only after its slowest shard write', async (t) => {
  const holding = new HoldingIo();
  const { store, dir } = await smallStore('replica:3', 6, { io: holding.io });
  const ino = store.ns.create(1, 'f', 0o644, 0, 0).ino;
  await store.write(ino, 0, randomBytes(prng(1), CS)); // a chunk file: past the small-file path
  const want = randomBytes(prng(2), 2 * CS);
  // Four parts over chunks 1 and 2; the second and third are views of one buffer, as slab pieces are.
  const mid = Buffer.from(want.subarray(CS / 2, CS + CS / 2));
  const parts = [
    Buffer.from(want.subarray(0, CS / 2)),
    mid.subarray(0, CS / 2),
    mid.subarray(CS / 2),
    Buffer.from(want.subarray(CS + CS / 2)),
  ];
  holding.armed = true;
  const writing = store.writeParts(ino, CS, parts, 3 * CS);
  t.not(writing, null, 'a plain replica layout takes the parts');
  let settled = false;
  void writing!.then(() => (settled = true));
  for (let i = 0; i < 2000 && holding.held === 0; i++) await new Promise((resolve) => setTimeout(resolve, 1));
  t.is(holding.held, 1, 'one shard write is held');
  // The other five shard writes of chunks 1 and 2 end (renamed into place); the store may not settle
  // meanwhile, however long it is given (a store that settled at a quorum would, here).
  const done = (): number => shardFiles(dir).filter((f) => !f.includes('.tmp.')).length;
  for (let i = 0; i < 5000 && done() < 3 + 5; i++) await new Promise((resolve) => setTimeout(resolve, 1));
  t.is(done(), 3 + 5, 'every other shard file is in place');
  for (let i = 0; i < 200 && !settled; i++) await new Promise((resolve) => setTimeout(resolve, 1));
  t.false(settled, 'not settled while a shard write reading the parts is in flight');
  holding.release();
  await writing;
  for (const p of parts) p.fill(0xee); // the caller's memory reused once the store settled
  t.true((await store.read(ino, CS, 2 * CS)).equals(want), 'the bytes read back are exactly the ones written');
  await store.sync();
  const key = parseBitrotKey(fs.readFileSync(path.join(dir, 'bitrot.key')));
  const files = shardFiles(dir);
  t.is(files.length, 9, 'three chunks, three replicas each');
  for (const f of files) t.notThrows(() => verifyShardBytes(fs.readFileSync(f), key), `${f} verifies`);
  await store.close();
});

test('parts the shard hashes cannot take as they lie are refused: ec layouts, slices not of whole bitrot blocks', async (t) => {
  const ec = await smallStore('ec:4+2');
  const a = ec.store.ns.create(1, 'a', 0o644, 0, 0).ino;
  await ec.store.write(a, 0, randomBytes(prng(3), CS));
  t.is(ec.store.writeParts(a, CS, [Buffer.alloc(CS / 2, 1), Buffer.alloc(CS / 2, 2)]), null);
  await ec.store.close();
  const rep = await smallStore('replica:3');
  const b = rep.store.ns.create(1, 'b', 0o644, 0, 0).ino;
  await rep.store.write(b, 0, randomBytes(prng(4), CS));
  t.is(rep.store.writeParts(b, CS, [Buffer.alloc(1000, 1), Buffer.alloc(CS - 1000, 2)]), null, 'a slice of 1000 bytes');
  const whole = rep.store.writeParts(b, CS, [Buffer.alloc(SMALL.bitrotBlockBytes, 1), Buffer.alloc(1000, 2)]);
  t.not(whole, null, 'whole blocks, then a short last slice');
  await whole;
  const got = await rep.store.read(b, CS, SMALL.bitrotBlockBytes + 1000);
  t.true(got.equals(Buffer.concat([Buffer.alloc(SMALL.bitrotBlockBytes, 1), Buffer.alloc(1000, 2)])));
  await rep.store.close();
});
