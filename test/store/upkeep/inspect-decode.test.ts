// store/upkeep/inspect-decode.ts (DESIGN §10): inspect decodes a verified stored payload. With the
// store key an encrypted one is opened (the tag checked) and decompressed, to exactly content_len;
// without it, it says which key to give; a wrong key fails the tag; the compression is named from
// the bytes when the layout is not known; a payload that is not transformed is not decoded; an EC
// payload is joined from its data shards.
import test from 'ava';
import * as fs from 'node:fs';
import { HEADER_BYTES, ShardHeader, decodeHeader } from '../../../src/header';
import { ChunkRef } from '../../../store/chunks/chunk-ref';
import { decodeForInspect, joinEcPayload } from '../../../store/upkeep/inspect-decode';
import { SMALL, prng, randomBytes, smallStore } from '../helpers';
import { internals } from './fixture';

const TEXT = Buffer.alloc(SMALL.chunkSizeBytes, 'compressible text ');

/** A store of the layout holding TEXT in one file; its chunk's ref, header and each shard's verified payload. */
async function stored(layout: string) {
  const { store } = await smallStore(layout, 6, { smallFileMaxBytes: 0 });
  const ino = store.ns.create(1, 'f', 0o644, 0, 0).ino;
  await store.write(ino, 0, TEXT);
  const { env, files } = internals(store);
  const ref: ChunkRef = files.chunkRef(ino, 0);
  const h: ShardHeader = decodeHeader(fs.readFileSync(env.shards.path(ref, 0)).subarray(0, HEADER_BYTES));
  const payloads = await Promise.all(ref.diskIds.map((_, i) => env.shards.readWhole(ref, i)));
  return { store, env, ref, h, payloads };
}

test('compressed and encrypted: decoded with the key to content_len; without it, told which key to give', async (t) => {
  const s = await stored('replica:3,zstd,aes256gcm');
  const d = decodeForInspect(s.h, s.payloads[0], s.env.storeKey, { algo: 'zstd', level: 0 });
  t.like(d, { ok: true, rawBytes: TEXT.length, tagOk: true, error: null });
  t.true(d!.ratio! > 10);
  t.regex(d!.cipher!, /^v[12] /);
  const named = decodeForInspect(s.h, s.payloads[0], s.env.storeKey); // the algorithm from the bytes
  t.like(named, { ok: true, rawBytes: TEXT.length });
  const noKey = decodeForInspect(s.h, s.payloads[0], null);
  t.like(noKey, { ok: false, tagOk: null });
  t.regex(noKey!.error!, /no store key is loaded \(give it with CHUNKFS_KEYFILE=PATH\)/);
  const wrongKey = decodeForInspect(s.h, s.payloads[0], randomBytes(prng(5), s.env.storeKey!.length));
  t.like(wrongKey, { ok: false, tagOk: false });
  await s.store.close();
});

test('lz4 is named from the bytes; a raw payload is not decoded', async (t) => {
  const lz4 = await stored('replica:3,lz4');
  t.like(decodeForInspect(lz4.h, lz4.payloads[1], null), { ok: true, rawBytes: TEXT.length, tagOk: null });
  await lz4.store.close();
  const raw = await stored('replica:3');
  t.is(decodeForInspect(raw.h, raw.payloads[0], null), null);
  await raw.store.close();
});

test("an EC chunk's payload is joined from its data shards and decodes", async (t) => {
  const s = await stored('ec:4+2,zstd');
  const joined = joinEcPayload(s.h, s.payloads.slice(0, 4));
  t.is(joined.length, s.ref.stored!.lenBytes);
  t.like(decodeForInspect(s.h, joined, null), { ok: true, rawBytes: TEXT.length });
  const swapped = joinEcPayload(s.h, [s.payloads[1], s.payloads[0], s.payloads[2], s.payloads[3]]);
  t.false(decodeForInspect(s.h, swapped, null)!.ok, 'shards in the wrong order do not decode');
  await s.store.close();
});
