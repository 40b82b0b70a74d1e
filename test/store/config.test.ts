// Store creation/open refusals (issue 3) and rendezvous placement (DESIGN §3).
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ConfigError } from '../../store/config';
import { parseLayout, writeQuorum } from '../../store/layout';
import { placeChunk, placementScore } from '../../store/placement';
import { Store } from '../../store/store';
import { u64le, xxh3_64 } from '../../src/xxh3';
import { tmpDir } from './helpers';

test('create refuses non-empty target, duplicate disks, too few disks; key file 0600', async (t) => {
  const busy = tmpDir();
  fs.writeFileSync(path.join(busy, 'x'), 'x');
  await t.throwsAsync(Store.create(busy), { instanceOf: ConfigError, message: /not empty/ });
  await t.throwsAsync(Store.create(path.join(tmpDir(), 's'), { disks: ['a', 'b', 'a'] }), { message: /duplicate disk/ });
  await t.throwsAsync(Store.create(path.join(tmpDir(), 's'), { disks: 5, layout: 'ec:4+2' }), { message: /needs 6 disks, only 5/ });
  const dir = path.join(tmpDir(), 's');
  const s = await Store.create(dir, { disks: 3 });
  await s.close();
  const key = path.join(dir, 'bitrot.key');
  t.is(fs.statSync(key).mode & 0o777, 0o600);
  t.is(fs.statSync(key).size, 32);
});

test('open refuses corrupt config, unknown version, missing key', async (t) => {
  const dir = path.join(tmpDir(), 's');
  await (await Store.create(dir, { disks: 3 })).close();
  const cfgPath = path.join(dir, 'chunkfs.json');
  const good = fs.readFileSync(cfgPath, 'utf8');
  fs.writeFileSync(cfgPath, good.slice(0, 40));
  await t.throwsAsync(Store.open(dir), { instanceOf: ConfigError, message: /chunkfs\.json: corrupt config/ });
  fs.writeFileSync(cfgPath, good.replace('"formatVersion": 1', '"formatVersion": 7'));
  await t.throwsAsync(Store.open(dir), { message: /unknown formatVersion 7/ });
  fs.writeFileSync(cfgPath, good);
  fs.rmSync(path.join(dir, 'bitrot.key'));
  await t.throwsAsync(Store.open(dir), { message: /bitrot\.key: bitrot key file missing/ });
});

test('layouts parse and validate', (t) => {
  t.deepEqual(parseLayout('replica:3'), { kind: 'replica', replicas: 3, text: 'replica:3' });
  t.deepEqual(parseLayout('ec:4+2'), { kind: 'ec', k: 4, m: 2, text: 'ec:4+2' });
  for (const bad of ['replica:0', 'ec:4', 'ec:0+2', 'ec:4+0', 'ec:200+100', 'mirror', 'replica:3 ']) t.throws(() => parseLayout(bad));
  t.is(writeQuorum(parseLayout('replica:3')), 2);
  t.is(writeQuorum(parseLayout('ec:4+2')), 4);
  t.is(writeQuorum(parseLayout('ec:2+1')), 2);
});

test('placement: score formula, distinct disks, epochs never move data', (t) => {
  const seed = 0x0123456789abcdefn;
  const expected = xxh3_64(Buffer.concat([u64le(seed), u64le(5n), u64le(3n)]));
  t.is(placementScore(seed, 5n, 3), expected);
  const disks = Array.from({ length: 8 }, (_, id) => ({ id, epoch: 1 }));
  for (let c = 0n; c < 50n; c++) {
    const placed = placeChunk(disks, seed, 1, c, 6);
    t.is(new Set(placed).size, 6);
    const scores = placed.map((d) => placementScore(seed, c, d));
    for (let i = 1; i < scores.length; i++) t.true(scores[i - 1] >= scores[i], 'shard i on the i-th highest score');
    const grown = [...disks, { id: 8, epoch: 2 }, { id: 9, epoch: 2 }];
    t.deepEqual(placeChunk(grown, seed, 1, c, 6), placed, 'disks added later do not move epoch-1 data');
  }
  t.throws(() => placeChunk(disks, seed, 1, 0n, 9), { message: /needs 9 disks/ });
});
