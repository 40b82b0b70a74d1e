// Store creation/open refusals (DESIGN §4) and rendezvous placement (DESIGN §3).
import test from 'ava';
import { sqliteOnlyTest } from '../helpers/pg-meta';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ConfigError } from '../../store/config';
import { parseLayout, writeQuorum } from '../../src/layout';
import { placeChunk, placementScore } from '../../store/chunks/placement';
import { Store } from '../../store/store';
import { u64le, xxh3_64 } from '../../src/xxh3';
import { tmpDir } from './helpers';

test('create refuses non-empty target, duplicate disks, too few disks; key file 0600', async (t) => {
  const busy = tmpDir();
  fs.writeFileSync(path.join(busy, 'x'), 'x');
  await t.throwsAsync(Store.create(busy), { instanceOf: ConfigError, message: /not empty/ });
  await t.throwsAsync(Store.create(path.join(tmpDir(), 's'), { disks: ['a', 'b', 'a'] }), {
    message: /duplicate disk/,
  });
  await t.throwsAsync(Store.create(path.join(tmpDir(), 's'), { disks: 5, layout: 'ec:4+2' }), {
    message: /needs 6 disks, only 5/,
  });
  const dir = path.join(tmpDir(), 's');
  const s = await Store.create(dir, { disks: 3 });
  await s.close();
  const key = path.join(dir, 'bitrot.key');
  t.is(fs.statSync(key).mode & 0o777, 0o600);
  t.is(fs.statSync(key).size, 32);
});

/** Every entry under dir with its type, size, mode, mtime and content hash: "nothing on disk changed". */
function snapshot(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      const st = fs.statSync(p);
      const rel = path.relative(dir, p);
      if (e.isDirectory()) {
        out.push(`${rel}/ ${st.mode.toString(8)}`);
        walk(p);
      } else {
        const hash = crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex');
        out.push(`${rel} ${st.size} ${st.mode.toString(8)} ${st.mtimeMs} ${hash}`);
      }
    }
  };
  walk(dir);
  return out.sort();
}

interface BadCase {
  name: string;
  damage: (dir: string, config: Record<string, unknown>) => void;
  message: RegExp;
}

const CFG = 'chunkfs.json';
const writeCfg = (dir: string, c: unknown): void => fs.writeFileSync(path.join(dir, CFG), JSON.stringify(c, null, 2));
const BAD_CASES: BadCase[] = [
  {
    name: 'garbage config',
    damage: (d) => fs.writeFileSync(path.join(d, CFG), '\u0000\u0001 not json {{'),
    message: /chunkfs\.json: corrupt config, not valid JSON/,
  },
  {
    name: 'truncated config',
    damage: (d) => fs.writeFileSync(path.join(d, CFG), fs.readFileSync(path.join(d, CFG), 'utf8').slice(0, 40)),
    message: /chunkfs\.json: corrupt config/,
  },
  {
    name: 'config that is a JSON array',
    damage: (d) => fs.writeFileSync(path.join(d, CFG), '[1, 2]'),
    message: /chunkfs\.json: corrupt config, not a JSON object/,
  },
  {
    name: 'unknown format version',
    damage: (d, c) => writeCfg(d, { ...c, formatVersion: 7 }),
    message: /chunkfs\.json: unknown formatVersion 7/,
  },
  {
    name: 'a disk path named twice',
    damage: (d, c) => {
      const disks = (c.disks as Array<{ path: string }>).map((x) => ({ ...x }));
      disks[2].path = `./${disks[0].path}/`; // spelled differently, the same directory
      writeCfg(d, { ...c, disks });
    },
    message: /chunkfs\.json: disks 0 and 2 name the same path .*disks\/d0/,
  },
  {
    name: 'a bad store uuid',
    damage: (d, c) => writeCfg(d, { ...c, storeUuid: 'nope' }),
    message: /chunkfs\.json: storeUuid "nope" is not a lowercase uuid/,
  },
  {
    name: 'a metadata group delay past the full commit timer',
    damage: (d, c) => writeCfg(d, { ...c, defaults: { ...(c.defaults as object), metaGroupMs: 5001 } }),
    message: /chunkfs\.json: metaGroupMs 5001 must be a whole number of milliseconds, 0\.\.5000/,
  },
  {
    name: 'missing key file',
    damage: (d) => fs.rmSync(path.join(d, 'bitrot.key')),
    message: /bitrot\.key: bitrot key file missing/,
  },
  {
    name: 'short key file',
    damage: (d) => {
      const k = path.join(d, 'bitrot.key');
      fs.writeFileSync(k, fs.readFileSync(k).subarray(0, 31));
    },
    message: /bitrot\.key: bitrot key must be 32 bytes, found 31/,
  },
  {
    name: 'long key file',
    damage: (d) => fs.appendFileSync(path.join(d, 'bitrot.key'), 'x'),
    message: /bitrot\.key: bitrot key must be 32 bytes, found 33/,
  },
  {
    name: 'key file is a directory',
    damage: (d) => {
      fs.rmSync(path.join(d, 'bitrot.key'));
      fs.mkdirSync(path.join(d, 'bitrot.key'), { mode: 0o700 });
    },
    message: /bitrot\.key: bitrot key file is not a regular file/,
  },
  {
    name: 'a metadata engine this build does not know',
    damage: (d, c) => writeCfg(d, { ...c, meta: { engine: 'mysql', url: 'mysql://h/db' } }),
    message: /mysql:\/\/h\/db: metadata engine 'mysql' is not one this build knows \(postgres\)/,
  },
  {
    name: 'a recorded connection string holding a password',
    damage: (d, c) => writeCfg(d, { ...c, meta: { engine: 'postgres', url: 'postgres://u:secret@h/db' } }),
    message: /postgres:\/\/u:\*\*\*@h\/db.*holds a password/,
  },
  {
    name: 'missing metadata database',
    damage: (d) => fs.rmSync(path.join(d, 'meta.db')),
    message: /meta\.db: metadata database missing/,
  },
];

for (const bad of BAD_CASES) {
  (bad.name === 'missing metadata database' ? sqliteOnlyTest : test)(
    `open refuses ${bad.name}, naming the file and the problem, and changes nothing on disk`,
    async (t) => {
      const dir = path.join(tmpDir(), 's');
      await (await Store.create(dir, { disks: 3 })).close();
      const config = JSON.parse(fs.readFileSync(path.join(dir, CFG), 'utf8')) as Record<string, unknown>;
      bad.damage(dir, config);
      const before = snapshot(dir);
      for (const readOnly of [false, true]) {
        await t.throwsAsync(Store.open(dir, { readOnly }), { instanceOf: ConfigError, message: bad.message });
        t.deepEqual(snapshot(dir), before, `nothing changed (readOnly ${readOnly})`);
      }
    },
  );
}

test('the untouched store of the cases above opens (the refusals come from the damage)', async (t) => {
  const dir = path.join(tmpDir(), 's');
  await (await Store.create(dir, { disks: 3 })).close();
  const s = await Store.open(dir);
  await s.close();
  t.pass();
});

test('layouts parse and validate', (t) => {
  t.deepEqual(parseLayout('replica:3'), {
    kind: 'replica',
    replicas: 3,
    text: 'replica:3',
    transforms: { compression: null, encryption: null },
  });
  t.deepEqual(parseLayout('ec:4+2'), {
    kind: 'ec',
    k: 4,
    m: 2,
    text: 'ec:4+2',
    transforms: { compression: null, encryption: null },
  });
  for (const bad of ['replica:0', 'ec:4', 'ec:0+2', 'ec:4+0', 'ec:200+100', 'mirror', 'replica:3 '])
    t.throws(() => parseLayout(bad));
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
