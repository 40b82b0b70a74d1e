// Shards named in words, grouped by chunk: "/a/f (file 3) chunk 0 shards 1,2; file 5 chunk 2 shard 0".
import type { ShardAt } from './actions/scrub';

export function shardList(refs: ShardAt[]): string {
  const byChunk = new Map<string, number[]>();
  for (const r of refs) {
    const k = `${r.path === null ? '' : `${r.path} (`}file ${r.ino}${r.path === null ? '' : ')'} chunk ${r.chunkIndex}`;
    byChunk.set(k, [...(byChunk.get(k) ?? []), r.shardIndex]);
  }
  return [...byChunk]
    .map(([k, v]) => `${k} shard${v.length > 1 ? 's' : ''} ${v.sort((a, b) => a - b).join(',')}`)
    .join('; ');
}
