// Hash tables (spec §2 region 2, §4) of recently read shards, by shard path. A verified read (§9)
// of a shard whose table is cached reads only its data span: one pread instead of two, which is a
// FUSE read's cheapest saving once its disk pages are cached (~17 us per pread measured
// with strace on random 4 KiB reads). Every data byte is still read and checked against its
// entry each time; the entries are what the disk held when the table was first read by a read
// that verified. ShardStore drops a path's table wherever it drops its cached header: a rewrite, an
// in-place patch (before and after), a delete, injected damage and every failed read, so a block
// is never checked against a hash it no longer has. Damage to the table region on disk after it
// was cached is found by scrub and heal (they read whole shards, bypassing this cache).
import { LRUCache } from 'lru-cache';
import { assert } from '../../src/errors';
import { HASH_ENTRY_BYTES } from '../../src/region';
import { SpanPlan } from '../../src/shard';

/** Bytes of tables kept: 8 MiB is 1,024 tables of a 4 MiB replica chunk (16 KiB blocks: 8 KiB each), 4 GiB of data. */
export const HASH_TABLE_CACHE_BYTES_MAX = 8 << 20;
/** Larger tables are not cached (a chunk of many small blocks): their reads keep reading entries. */
export const HASH_TABLE_CACHED_BYTES_MAX = 64 << 10;

/**
 * Where the entries of a read's blocks come from: the cache, or a read of the whole table to keep.
 * forgets: the cache's count of forgets when the read started (see keep).
 */
export type EntriesSource = { cached: Buffer } | { tableBytes: number; forgets: number } | null;

export class HashTableCache {
  private readonly tables = new LRUCache<string, Buffer>({
    maxSize: HASH_TABLE_CACHE_BYTES_MAX,
    sizeCalculation: (b) => b.length,
  });
  /** Forgets so far: a read on the pool that overlapped one (a patch of its shard, say) keeps nothing. */
  private forgets = 0;

  /** blockCount: the shard's, from the layout (the header is cross-checked against the same layout). */
  source(path: string, blockCount: number, plan: SpanPlan): EntriesSource {
    const table = this.tables.get(path);
    if (table !== undefined) {
      assert(
        table.length === blockCount * HASH_ENTRY_BYTES,
        `hash table cache: ${path} holds ${table.length} bytes, its layout ${blockCount} entries`,
      );
      return { cached: entriesOf(table, plan) };
    }
    const tableBytes = blockCount * HASH_ENTRY_BYTES;
    return tableBytes <= HASH_TABLE_CACHED_BYTES_MAX ? { tableBytes, forgets: this.forgets } : null;
  }

  /**
   * Keep a table read whole, after the read that used it verified (bytesRead short: not kept). Not
   * when anything was forgotten since the read started: a read on the pool may have read the table
   * before an in-place patch wrote new entries and finish after the patch forgot the path; keeping
   * it would check the patched blocks against their old entries. One global count is enough: such
   * a read only skips caching, and the next read of the shard keeps its table.
   */
  keep(path: string, table: Buffer, bytesRead: number, source: { forgets: number }): void {
    if (bytesRead === table.length && source.forgets === this.forgets) this.tables.set(path, table);
  }

  /** A cached table as it is (a read grant copies it), or undefined. */
  peek(path: string): Buffer | undefined {
    return this.tables.get(path);
  }

  forget(path: string): void {
    this.forgets++;
    this.tables.delete(path);
  }

  /** Every table (another process may have patched any shard: a read-only follower, DESIGN §9). */
  forgetAll(): void {
    this.forgets++;
    this.tables.clear();
  }
}

/** The plan's entries inside a whole table (a view; possibly short when the table read was short). */
export function entriesOf(table: Buffer, plan: SpanPlan): Buffer {
  const at = plan.first * HASH_ENTRY_BYTES;
  return table.subarray(at, at + plan.entriesLen);
}
