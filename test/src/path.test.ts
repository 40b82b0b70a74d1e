import test from 'ava';
import { chunkDirRelPath, isTempName, parseShardRelPath, shardRelPath, tempName } from '../../src/path';
import { u64le, xxh3_64 } from '../../src/xxh3';

test('shard path layout (spec §7, DESIGN §3)', (t) => {
  const fileId = 0x00000000000000abn;
  const h = xxh3_64(u64le(fileId));
  const p0 = Number(h & 0xffn)
    .toString(16)
    .padStart(2, '0');
  const p1 = Number((h >> 8n) & 0xffn)
    .toString(16)
    .padStart(2, '0');
  const rel = shardRelPath(fileId, 3n, 12n, 5);
  t.is(rel, `.chunks/${p0}/${p1}/00000000000000ab.v3/c12/5.shard`);
  t.is(chunkDirRelPath(fileId, 3n, 12n), `.chunks/${p0}/${p1}/00000000000000ab.v3/c12`);
  t.regex(rel, /^\.chunks\/[0-9a-f]{2}\/[0-9a-f]{2}\//);
});

test('fan-out keys on file_id only', (t) => {
  const a = shardRelPath(99n, 1n, 0n, 0).split('/').slice(0, 3).join('/');
  const b = shardRelPath(99n, 7n, 1234n, 3).split('/').slice(0, 3).join('/');
  t.is(a, b);
  const dirs = new Set<string>();
  for (let i = 0n; i < 64n; i++) dirs.add(shardRelPath(i, 1n, 0n, 0).split('/')[1]);
  t.true(dirs.size > 20, 'file ids spread over p0');
});

test('temp names and parsing', (t) => {
  const rel = shardRelPath(0xffffffffffffffffn, 18446744073709551615n, 0n, 65535);
  t.deepEqual(parseShardRelPath(rel), {
    fileId: 0xffffffffffffffffn,
    version: 18446744073709551615n,
    chunkIndex: 0n,
    shardIndex: 65535,
  });
  const tmp = tempName(rel, 0x1an);
  t.is(tmp, rel + '.tmp.000000000000001a');
  t.true(isTempName(tmp));
  t.false(isTempName(rel));
  t.is(parseShardRelPath(tmp), null);
  t.is(parseShardRelPath(rel.replace('.v', '.v0')), null, 'non-canonical version');
  const parts = rel.split('/');
  parts[1] = parts[1] === '00' ? '01' : '00';
  t.is(parseShardRelPath(parts.join('/')), null, 'wrong fan-out');
  t.is(parseShardRelPath('.chunks/zz'), null);
});
