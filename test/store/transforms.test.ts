// Transforms (DESIGN §10, spec §3.1 bits 1 and 2) at the store level: layouts carry transforms;
// whole chunks are stored compressed and/or encrypted, flags and lengths in the headers and the
// chunk map; incompressible chunks stay raw; partial writes become new versions; reads verify,
// decrypt, decompress; the store key is checked at open.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decodeHeader, FLAG_COMPRESSED, FLAG_ENCRYPTED, HEADER_BYTES } from '../../src/header';
import { parseLayout } from '../../src/layout';
import { dataStartBytes } from '../../src/region';
import { LAYOUT_XATTR } from '../../store/meta/attr';
import { ROOT_INO } from '../../store/meta/meta';
import { openStoreMetaOf, testMetaEngine } from '../helpers/pg-meta';
import { Store } from '../../store/store';
import { SMALL, prng, randomBytes, smallStore, tmpDir } from './helpers';

/** Text that compresses (repeated lines with numbers). */
function compressible(length: number, seed = 1): Buffer {
  const lines: string[] = [];
  let n = 0;
  for (let i = 0; n < length; i++) {
    const l = `line ${i} of seed ${seed}: the quick brown fox jumps over the lazy dog ${i % 97}\n`;
    lines.push(l);
    n += l.length;
  }
  return Buffer.from(lines.join('')).subarray(0, length);
}

function shardFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.shard')) out.push(p);
    }
  };
  walk(path.join(dir, 'disks'));
  return out;
}

type ChunkRowDb = {
  chunk_index: bigint;
  version: bigint;
  logical_len: bigint;
  stored_len: bigint | null;
  stored_flags: bigint;
};
const ROWS_SQL =
  'SELECT chunk_index, version, logical_len, stored_len, stored_flags FROM chunks WHERE ino = ? AND version > 0 ORDER BY chunk_index';

/** The chunk rows of a file: through the open store's connection, else meta.db opened read-only. */
function chunkRows(dir: string, ino: number, open?: Store): ChunkRowDb[] {
  if (open !== undefined)
    return (open as unknown as { db: import('../../store/meta/sql-engine').Db }).db
      .prepare(ROWS_SQL)
      .all(ino) as ChunkRowDb[];
  const db = openStoreMetaOf(dir, true);
  try {
    return db.prepare(ROWS_SQL).all(ino) as ChunkRowDb[];
  } finally {
    db.close();
  }
}

test('layout texts with transforms parse; bad ones say why', (t) => {
  t.deepEqual(parseLayout('ec:4+2,zstd,aes256gcm').transforms, {
    compression: { algo: 'zstd', level: 3 },
    encryption: 'aes256gcm',
  });
  t.deepEqual(parseLayout('replica:3,lz4').transforms, { compression: { algo: 'lz4', level: 1 }, encryption: null });
  t.deepEqual(parseLayout('replica:2,zstd:9').transforms.compression, { algo: 'zstd', level: 9 });
  t.deepEqual(parseLayout('replica:3').transforms, { compression: null, encryption: null });
  t.throws(() => parseLayout('replica:3,gzip'), { message: /transform 'gzip': unknown/ });
  t.throws(() => parseLayout('ec:4+2,aes256gcm,zstd'), { message: /compression comes before encryption/ });
  t.throws(() => parseLayout('replica:3,zstd,lz4'), { message: /at most one compression/ });
  t.throws(() => parseLayout('replica:3,zstd:3'), { message: /write it as 'replica:3,zstd'/ });
  t.throws(() => parseLayout('replica:3,zstd:40'), { message: /zstd level must be 1\.\.19/ });
  t.throws(() => parseLayout('replica:3,'), { message: /empty name/ });
});

for (const layout of [
  'replica:3,zstd',
  'replica:3,lz4',
  'ec:4+2,zstd',
  'replica:3,aes256gcm',
  'ec:4+2,zstd,aes256gcm',
  'ec:4+2,lz4,aes256gcm',
]) {
  test(`${layout}: whole chunks stored transformed, read back, reopened`, async (t) => {
    const { store, dir } = await smallStore(layout);
    const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
    const data = compressible(2 * SMALL.chunkSizeBytes + 12345);
    await store.write(f.ino, 0, data);
    t.true((await store.read(f.ino, 0, data.length)).equals(data));
    t.true(
      (await store.read(f.ino, 300_000, 1000)).equals(data.subarray(300_000, 301_000)),
      'a small read inside a compressed chunk',
    );
    await store.close();
    const l = parseLayout(layout);
    const want =
      (l.transforms.compression !== null ? FLAG_COMPRESSED : 0) |
      (l.transforms.encryption !== null ? FLAG_ENCRYPTED : 0);
    const rows = chunkRows(dir, f.ino);
    t.is(rows.length, 3);
    for (const r of rows) {
      t.is(Number(r.stored_flags), want);
      if (l.transforms.compression !== null)
        t.true(Number(r.stored_len) < Number(r.logical_len) / 2, `chunk ${r.chunk_index} compressed`);
    }
    for (const p of shardFiles(dir)) {
      const h = decodeHeader(fs.readFileSync(p).subarray(0, HEADER_BYTES));
      t.is(h.flags & (FLAG_COMPRESSED | FLAG_ENCRYPTED), want, p);
      t.true(h.contentLenBytes >= h.chunkLogicalLenBytes || l.transforms.compression === null);
      if (l.transforms.encryption !== null)
        t.false(fs.readFileSync(p).includes(Buffer.from('the quick brown fox')), 'no plaintext on the disks');
    }
    const again = await Store.open(dir);
    t.true((await again.read(f.ino, 0, data.length)).equals(data));
    const st = await again.status();
    t.deepEqual(st.layoutsInUse, [{ layout, files: 1 }]);
    t.is(
      st.transformedChunks.reduce((n, c) => n + c.chunks, 0),
      3,
    );
    const scrub = await again.scrub();
    t.is(scrub.badCount, 0, JSON.stringify(scrub.bad));
    t.true(scrub.examined >= 3 * 3, `${scrub.examined} shards examined`);
    await again.close();
  });
}

test('incompressible chunks are stored raw (flags clear), compressible ones of the same file compressed', async (t) => {
  const { store, dir } = await smallStore('replica:3,zstd');
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  const noise = randomBytes(prng(5), SMALL.chunkSizeBytes);
  const text = compressible(SMALL.chunkSizeBytes);
  await store.write(f.ino, 0, Buffer.concat([noise, text]));
  const rows = chunkRows(dir, f.ino, store);
  t.is(rows[0].stored_len, null);
  t.is(Number(rows[0].stored_flags), 0);
  t.is(Number(rows[1].stored_flags), FLAG_COMPRESSED);
  t.true((await store.read(f.ino, 0, 2 * SMALL.chunkSizeBytes)).equals(Buffer.concat([noise, text])));
  await store.close();
});

for (const layout of ['replica:3,zstd', 'ec:4+2,lz4,aes256gcm', 'replica:3,aes256gcm']) {
  test(`${layout}: partial overwrites become one new version through the intent log`, async (t) => {
    const { store, dir } = await smallStore(layout, 6, { smallFileMaxBytes: 0 });
    const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
    const data = compressible(SMALL.chunkSizeBytes + 5000, 7);
    await store.write(f.ino, 0, data);
    const v1 = chunkRows(dir, f.ino, store)[0].version;
    for (let i = 0; i < 20; i++) {
      const patch = Buffer.from(`patch ${i} `.repeat(30));
      const at = 1000 + i * 9001;
      await store.write(f.ino, at, patch);
      patch.copy(data, at);
    }
    t.true((await store.read(f.ino, 0, data.length)).equals(data), 'reads overlay the pending intents');
    await store.applyNow();
    const rows = chunkRows(dir, f.ino, store);
    t.true(rows[0].version > v1, 'a new version');
    t.true(rows[0].version - v1 <= 3n, `intents gathered into few rewrites (${rows[0].version - v1})`);
    t.not(Number(rows[0].stored_flags), 0);
    t.true((await store.read(f.ino, 0, data.length)).equals(data));
    await store.close();
    const again = await Store.open(dir);
    t.true((await again.read(f.ino, 0, data.length)).equals(data));
    t.is((await again.scrub()).badCount, 0);
    await again.close();
  });
}

test('a directory layout xattr with transforms is inherited and shown by getxattr', async (t) => {
  const { store } = await smallStore('replica:3');
  const d = store.ns.mkdir(ROOT_INO, 'd', 0o755, 0, 0);
  store.ns.setxattr(d.ino, LAYOUT_XATTR, Buffer.from('ec:4+2,zstd,aes256gcm'));
  const f = store.ns.create(d.ino, 'f', 0o644, 0, 0);
  t.is(store.ns.getxattr(f.ino, LAYOUT_XATTR).toString(), 'ec:4+2,zstd,aes256gcm');
  t.throws(() => store.ns.setxattr(d.ino, LAYOUT_XATTR, Buffer.from('ec:4+2,aes256gcm,zstd')), {
    message: /compression comes before encryption/,
  });
  await store.close();
});

test('a wrong or missing store key is refused at open with nothing changed', async (t) => {
  const { store, dir } = await smallStore('replica:3,aes256gcm');
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  await store.write(f.ino, 0, compressible(100_000));
  await store.close();
  const metaFile = path.join(dir, 'meta.db'); // SQLite's; on PostgreSQL the refusals come before any connection
  const before = testMetaEngine() === 'sqlite' ? fs.readFileSync(metaFile) : null;
  const wrong = path.join(tmpDir(), 'wrong.key');
  fs.writeFileSync(wrong, Buffer.alloc(32, 7), { mode: 0o600 });
  await t.throwsAsync(Store.open(dir, { keyFile: wrong }), { message: /is not the key of store/ });
  fs.renameSync(path.join(dir, 'data.key'), path.join(dir, 'data.key.away'));
  await t.throwsAsync(Store.open(dir), { message: /store key file .*data\.key does not exist/ });
  if (before !== null) t.true(fs.readFileSync(metaFile).equals(before), 'meta.db untouched');
  fs.renameSync(path.join(dir, 'data.key.away'), path.join(dir, 'data.key'));
  const again = await Store.open(dir);
  t.is((await again.read(f.ino, 0, 100_000)).length, 100_000);
  await again.close();
});

test('a store key kept outside the store: mkfs --keyfile, then open only with it', async (t) => {
  const keyFile = path.join(tmpDir(), 'outside.key');
  const { store, dir } = await smallStore('ec:4+2,zstd,aes256gcm', 6, { keyFile });
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  const data = compressible(SMALL.chunkSizeBytes * 2);
  await store.write(f.ino, 0, data);
  await store.close();
  t.false(fs.existsSync(path.join(dir, 'data.key')));
  t.is(fs.statSync(keyFile).mode & 0o777, 0o600);
  await t.throwsAsync(Store.open(dir), { message: /keeps its key outside the store: give it with -o keyfile=PATH/ });
  const again = await Store.open(dir, { keyFile });
  t.true((await again.read(f.ino, 0, data.length)).equals(data));
  await again.close();
});

/** Small text files written until a container is sealed. */
async function fillTextUntilSealed(store: Store, prefix: string): Promise<Array<{ ino: number; data: Buffer }>> {
  const db = (store as unknown as { db: import('../../store/meta/sql-engine').Db }).db;
  const sealed = (): number =>
    Number((db.prepare(`SELECT count(*) AS n FROM containers WHERE state = 'sealed'`).get() as { n: bigint }).n);
  const files: Array<{ ino: number; data: Buffer }> = [];
  for (let round = 0; round < 200 && sealed() === 0; round++) {
    const batch = Array.from({ length: 8 }, (_, i) => ({
      ino: store.ns.create(ROOT_INO, `${prefix}${round}-${i}`, 0o644, 0, 0).ino,
      data: compressible(500 + (((round * 8 + i) * 997) % 7000), round * 8 + i),
    }));
    await Promise.all(batch.map((f) => store.write(f.ino, 0, f.data)));
    files.push(...batch);
  }
  return files;
}

test('tools on transformed chunks: a sealed ec:4+2,zstd container is stored compressed; compaction, fsck and scrub work on it', async (t) => {
  const { store, dir } = await smallStore('ec:4+2,zstd', 6, {
    containerCapacityBytes: 96 * 1024,
    smallFileMaxBytes: 8 * 1024,
  });
  const db = (store as unknown as { db: import('../../store/meta/sql-engine').Db }).db;
  const files = await fillTextUntilSealed(store, 'f');
  const sealedRow = db.prepare(`SELECT id FROM containers WHERE state = 'sealed'`).get() as { id: bigint };
  const sid = Number(sealedRow.id);
  t.is(store.ns.getattr(sid)!.layout, 'ec:4+2,zstd', 'sealed in its pack class, transforms and all');
  const rows = chunkRows(dir, sid, store);
  t.true(
    rows.length > 0 && rows.every((r) => Number(r.stored_flags) === FLAG_COMPRESSED),
    JSON.stringify(rows, (_, v) => (typeof v === 'bigint' ? Number(v) : v)),
  );
  for (const f of files) t.true((await store.read(f.ino, 0, f.data.length)).equals(f.data));
  // Kill three quarters of the sealed container's needles, then compact it.
  const inSealed = files.filter(
    (f) =>
      Number((db.prepare('SELECT slice_container AS c FROM inodes WHERE ino = ?').get(f.ino) as { c: bigint }).c) ===
      sid,
  );
  const kept = inSealed.filter((_, i) => i % 4 === 0);
  for (const [i, f] of inSealed.entries()) {
    if (i % 4 === 0) continue;
    store.ns.unlink(ROOT_INO, store.ns.readdir(ROOT_INO).find((e) => e.ino === f.ino)!.name);
    await store.deleteFile(f.ino);
  }
  const report = await store.compact();
  t.true(report.compacted >= 1, JSON.stringify(report));
  t.is(store.ns.getattr(sid), null, 'the compacted container is gone');
  for (const f of [...kept, ...files.filter((f) => !inSealed.includes(f))])
    t.true((await store.read(f.ino, 0, f.data.length + 1)).equals(f.data));
  await store.reclaimNow();
  const fsck = await store.fsck();
  t.deepEqual(fsck.problems, [], 'fsck: every shard header agrees with the metadata');
  t.is(fsck.missing + fsck.badHeaders, 0);
  const scrub = await store.scrub();
  t.is(scrub.badCount, 0);
  t.deepEqual(scrub.leaks.paths, []);
  await store.close();
});

test('files of encrypting layouts are packed into encrypted containers; each append is a new version of the tail chunk', async (t) => {
  const { store, dir } = await smallStore('replica:3,aes256gcm', 6, { smallFileMaxBytes: 8 * 1024 });
  const files: Array<{ ino: number; data: Buffer }> = [];
  // Three appends (one per sync): the second and third patch the container's tail chunk, which is
  // encrypted, so each becomes a new version of it (DESIGN §10), never bytes in the clear.
  for (let i = 0; i < 3; i++) {
    const f = store.ns.create(ROOT_INO, `small${i}`, 0o644, 0, 0);
    const data = compressible(3000, i + 1);
    await store.write(f.ino, 0, data);
    await store.sync();
    files.push({ ino: f.ino, data });
    t.is(chunkRows(dir, f.ino, store).length, 0, 'no chunk of its own: a needle in a container');
  }
  for (const f of files)
    t.true((await store.read(f.ino, 0, f.data.length)).equals(f.data), 'read back before the applier ran');
  const containers = store.ns.db.prepare('SELECT id, pack_class FROM containers').all() as Array<{
    id: bigint;
    pack_class: string;
  }>;
  t.is(containers.length, 1);
  t.is(containers[0].pack_class, 'replica:3,aes256gcm');
  await store.close(); // applies every intent
  for (const p of shardFiles(dir)) {
    for (const f of files) t.false(fs.readFileSync(p).includes(f.data.subarray(0, 40)), 'no plaintext on the disks');
  }
  const rows = chunkRows(dir, Number(containers[0].id));
  t.is(rows.length, 1, 'one container chunk');
  t.is(Number(rows[0].stored_flags), FLAG_ENCRYPTED, 'the open container is stored encrypted');
  t.true(Number(rows[0].version) > 1, `appends wrote new versions (version ${rows[0].version})`);
  const again = await Store.open(dir);
  for (const f of files) t.true((await again.read(f.ino, 0, f.data.length)).equals(f.data), 'read back after reopen');
  const scrub = await again.scrub();
  t.is(scrub.badCount, 0);
  t.deepEqual(scrub.leaks.paths, [], 'old versions of the tail chunk are reclaimed');
  await again.close();
});

test('a whole-chunk decode whose stored bytes fail their hashes on two replicas is served by the third (payload read straight into the decode buffer), counted and queued', async (t) => {
  const { store, dir } = await smallStore('replica:3,zstd,aes256gcm', 6, { smallFileMaxBytes: 0 });
  const f = store.ns.create(ROOT_INO, 'f', 0o644, 0, 0);
  const data = compressible(2 * SMALL.chunkSizeBytes, 3); // compressed: decoded whole, never by segments
  await store.write(f.ino, 0, data);
  await store.close();
  const chunk0 = shardFiles(dir).filter((p) => {
    const h = decodeHeader(fs.readFileSync(p).subarray(0, HEADER_BYTES));
    return h.chunkIndex === 0n && h.shardIndex < 2;
  });
  t.is(chunk0.length, 2);
  for (const p of chunk0) {
    const b = fs.readFileSync(p);
    b[dataStartBytes(decodeHeader(b.subarray(0, HEADER_BYTES)).blockCount) + 100] ^= 0x20; // the payload's first bitrot block
    fs.writeFileSync(p, b);
  }
  const again = await Store.open(dir);
  t.true((await again.read(f.ino, 0, data.length)).equals(data), 'the third replica served the chunk');
  const s = await again.status();
  t.true(s.counters.bitrot_errors >= 2, JSON.stringify(s.counters));
  t.true(s.counters.failovers >= 1, JSON.stringify(s.counters));
  t.true(s.healQueueLength >= 2, 'both damaged replicas queued');
  t.is(s.counters.unrecoverable_reads, 0);
  await again.close();
});
