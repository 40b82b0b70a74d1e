// store/chunks/hash-table-cache.ts: what is kept, and that a read overlapping a forget keeps nothing.
import test from 'ava';
import { HASH_ENTRY_BYTES } from '../../src/region';
import { spanPlan } from '../../src/shard';
import { HashTableCache } from '../../store/chunks/hash-table-cache';

const BLOCKS = 256;
const BLOCK_BYTES = 16 * 1024;
const plan = spanPlan(
  { dataLenBytes: BLOCKS * BLOCK_BYTES, bitrotBlockBytes: BLOCK_BYTES },
  5 * BLOCK_BYTES + 100,
  4096,
)!;
const table = (): Buffer => Buffer.alloc(BLOCKS * HASH_ENTRY_BYTES, 7);

test("a table read whole is kept and serves the plan's entries; a short read is not kept; forget drops it", (t) => {
  const c = new HashTableCache();
  const first = c.source('/d/a', BLOCKS, plan);
  t.true(first !== null && 'tableBytes' in first && first.tableBytes === BLOCKS * HASH_ENTRY_BYTES);
  c.keep('/d/a', table(), BLOCKS * HASH_ENTRY_BYTES - 1, first as { forgets: number });
  t.true('tableBytes' in (c.source('/d/a', BLOCKS, plan) ?? {}), 'a short read is not kept');
  const second = c.source('/d/a', BLOCKS, plan) as { forgets: number };
  c.keep('/d/a', table(), BLOCKS * HASH_ENTRY_BYTES, second);
  const cached = c.source('/d/a', BLOCKS, plan);
  t.true(
    cached !== null && 'cached' in cached && cached.cached.length === plan.entriesLen,
    "the plan's entries from the cache",
  );
  c.forget('/d/a');
  t.true('tableBytes' in (c.source('/d/a', BLOCKS, plan) ?? {}), 'forgotten');
});

test('a read that overlapped a forget (an in-place patch finishing meanwhile) keeps nothing', (t) => {
  const c = new HashTableCache();
  const started = c.source('/d/a', BLOCKS, plan) as { forgets: number };
  c.forget('/d/a'); // the patch's forget, after the read had read the old entries
  c.keep('/d/a', table(), BLOCKS * HASH_ENTRY_BYTES, started);
  t.true('tableBytes' in (c.source('/d/a', BLOCKS, plan) ?? {}), 'not kept');
});

test('tables beyond the per-table bound are never cached', (t) => {
  const c = new HashTableCache();
  t.is(c.source('/d/b', 1 << 20, plan), null);
});
