// Model-based random test: seeded random writes, truncates and reads across
// chunk and bitrot-block boundaries, checked byte for byte against an in-memory file.
import test from 'ava';
import { Store } from '../../store/store';
import { prng, randomBytes, smallStore, SMALL } from './helpers';

const OPS = 120;
const FILE_BYTES_MAX = 3 * SMALL.chunkSizeBytes + 12345;

class ModelFile {
  bytes = Buffer.alloc(0);
  write(off: number, data: Buffer): void {
    if (off + data.length > this.bytes.length) {
      const grown = Buffer.alloc(off + data.length);
      this.bytes.copy(grown);
      this.bytes = grown;
    }
    data.copy(this.bytes, off);
  }
  truncate(size: number): void {
    const next = Buffer.alloc(size);
    this.bytes.copy(next, 0, 0, Math.min(size, this.bytes.length));
    this.bytes = next;
  }
  read(off: number, len: number): Buffer {
    return Buffer.from(this.bytes.subarray(Math.min(off, this.bytes.length), Math.min(off + len, this.bytes.length)));
  }
}

/** Offsets near interesting boundaries: chunk, bitrot block, EC fragment. */
function pickOffset(random: () => number, limit: number): number {
  const r = random();
  if (r < 0.3) {
    const unit = [SMALL.chunkSizeBytes, SMALL.bitrotBlockBytes, SMALL.ecBlockSizeBytes / 4, SMALL.ecBlockSizeBytes][
      Math.floor(random() * 4)
    ];
    const base = Math.floor(random() * Math.max(1, Math.floor(limit / unit))) * unit;
    return Math.max(0, base + Math.floor(random() * 9) - 4);
  }
  return Math.floor(random() * limit);
}

function pickLength(random: () => number): number {
  const r = random();
  if (r < 0.4) return 1 + Math.floor(random() * 100);
  if (r < 0.8) return 1 + Math.floor(random() * 3 * SMALL.bitrotBlockBytes);
  if (r < 0.95) return 1 + Math.floor(random() * SMALL.chunkSizeBytes);
  return SMALL.chunkSizeBytes + Math.floor(random() * SMALL.chunkSizeBytes); // whole-chunk overwrite
}

// grouped: whole-chunk writes join transaction groups (DESIGN §5), closed by a random sync now and
// then, so truncates, partial writes and reads meet rows that only a group holds.
for (const [layout, seed, grouped] of [
  ['replica:3', 1, false],
  ['ec:4+2', 2, false],
  ['ec:2+1', 3, false],
  ['replica:3', 4, true],
  ['ec:2+1', 5, true],
] as const) {
  test(`random ops vs model: ${layout} seed ${seed}${grouped ? ', transaction groups' : ''}`, async (t) => {
    const created = await smallStore(layout);
    let store = created.store;
    if (grouped) store.startGroups();
    const random = prng(seed);
    const f = store.ns.create(1, 'model', 0o644, 0, 0);
    t.is(f.layout, layout);
    const model = new ModelFile();
    for (let op = 0; op < OPS; op++) {
      if (op === OPS / 2) {
        await store.close(); // everything so far must survive a close and reopen
        store = await Store.open(created.dir);
        if (grouped) store.startGroups();
      }
      if (grouped && random() < 0.1) await store.sync();
      const r = random();
      if (r < 0.55) {
        const off = pickOffset(random, FILE_BYTES_MAX);
        const data = randomBytes(random, Math.min(pickLength(random), FILE_BYTES_MAX - off + 1));
        await store.write(f.ino, off, data);
        model.write(off, data);
      } else if (r < 0.65) {
        const size = pickOffset(random, FILE_BYTES_MAX);
        await store.truncate(f.ino, size);
        model.truncate(size);
      } else {
        const off = pickOffset(random, FILE_BYTES_MAX);
        const len = pickLength(random);
        const got = await store.read(f.ino, off, len);
        t.true(got.equals(model.read(off, len)), `op ${op}: read [${off}, +${len}) differs`);
      }
      t.is(store.ns.getattr(f.ino)!.sizeBytes, model.bytes.length, `op ${op}: size`);
    }
    const whole = await store.read(f.ino, 0, FILE_BYTES_MAX * 2);
    t.true(whole.equals(model.bytes), 'whole file equals the model');
    const s = await store.status();
    t.is(s.healQueueLength, 0, 'no failures without faults');
    if (grouped) t.true(s.groupsClosed > 0, 'whole-chunk writes went through transaction groups');
    t.is(s.counters.bitrot_errors + s.counters.missing_shards + s.counters.header_mismatches, 0);
    t.is((await store.scrub()).failed.length, 0);
    await store.close();
  });
}
