// The mount's young generation (cli/mount-memory.ts): it grows to its cap under load, and after an
// idle spell and a full collection (when V8 shrinks it) it grows back to the cap under load again.
// Before, the growth stopped for good at the cap, and once shrunk it stayed small (1-2 MiB: 45-65
// scavenges per 1,000 fsync'd writes against 10-20). Runs in a child node (a flag of its own heap).
import test from 'ava';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { SEMI_SPACE_BYTES_MAX } from '../../cli/mount-memory';

/**
 * V8 measures allocation throughput over the last 5 s of its samples (taken at collections); a full
 * collection with less than 1 KB/ms shrinks the young generation. A busy machine only lowers it.
 */
const IDLE_MS = 6000;
const CHILD_TIMEOUT_MS = 120_000;

const CHILD = `
const v8 = require('node:v8');
const { limitHeapGrowth } = require(process.argv[1]);
const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
limitHeapGrowth();
let kept = [];
// Objects that survive a scavenge or two (the write-back's and the requests' bookkeeping), a turn
// of the event loop apart (the cap is applied from the collections' observer).
async function load(turns) {
  for (let r = 0; r < turns; r++) {
    const a = [];
    for (let i = 0; i < 2000; i++) a.push({ i, s: 'x' + i });
    kept.push(a);
    if (kept.length > 20) kept.shift();
    await new Promise((resolve) => setImmediate(resolve));
  }
}
(async () => {
  await load(400);
  const grown = young();
  kept = [];
  gc(); // V8 samples allocation at collections: this one ends the loaded spell, the next one the idle one
  await new Promise((resolve) => setTimeout(resolve, Number(process.argv[2])));
  gc();
  await load(400);
  console.log(JSON.stringify({ grown, again: young() }));
})();
`;

test('the young generation grows back to its cap after an idle full collection', (t) => {
  const modulePath = path.join(__dirname, '..', '..', 'cli', 'mount-memory.js');
  const r = spawnSync(process.execPath, ['--expose-gc', '-e', CHILD, modulePath, String(IDLE_MS)], {
    encoding: 'utf8',
    timeout: CHILD_TIMEOUT_MS,
  });
  t.is(r.status, 0, r.stderr);
  const sizes = JSON.parse(r.stdout.trim()) as { grown: number; again: number };
  const capBytes = 2 * SEMI_SPACE_BYTES_MAX; // both semi-spaces
  t.is(sizes.grown, capBytes, 'grown to the cap under load');
  t.is(sizes.again, capBytes, 'back at the cap under load after the idle collection');
});
