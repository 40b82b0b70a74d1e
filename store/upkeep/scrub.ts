// Scrub (DESIGN §7): verify, and with repair rebuild, every shard of every live chunk,
// online (the mount's store, chunk by chunk under each inode's lock) or offline. Reports progress in
// shard bytes (done of total, so a caller can show a rate and an ETA) and can be held to a byte
// rate and cancelled.
import { BAD_LISTED_MAX, HealReport, Healer, emptyHealReport } from './heal';
import { ChunkEnv } from '../chunks/chunk-env';
import { Layout, parseLayout, shardCount } from '../../src/layout';
import { Pacer } from './pace';
import { LiveChunk, liveChunks } from '../meta/surveys';

export interface ScrubProgress {
  doneBytes: number;
  totalBytes: number;
  doneItems: number;
  totalItems: number;
}

export interface ScrubOptions {
  repair?: boolean;
  onProgress?(p: ScrubProgress): void;
  /** Read at most this many shard bytes per second. */
  rateBytesPerSec?: number;
  signal?: AbortSignal;
  /** Only the shards placed on this disk (replace-disk). */
  onlyDisk?: number;
  /** With repair: the leak scan removes freed files even past its share limit (store/upkeep/leak-scan.ts). */
  force?: boolean;
}

/** Shard bytes a chunk occupies: R copies, or K+M fragments of ceil(len/K) (DESIGN §3). */
function shardBytes(layout: Layout, logicalLenBytes: number): number {
  if (layout.kind === 'replica') return logicalLenBytes * shardCount(layout);
  return Math.ceil(logicalLenBytes / layout.k) * shardCount(layout);
}

function add(total: HealReport, one: HealReport): void {
  total.examined += one.examined;
  total.healed += one.healed;
  total.failed.push(...one.failed.slice(0, Math.max(0, BAD_LISTED_MAX - total.failed.length)));
  total.badCount += one.badCount;
  total.bad.push(...one.bad.slice(0, Math.max(0, BAD_LISTED_MAX - total.bad.length)));
}

export async function scrubChunks(env: ChunkEnv, healer: Healer, opts: ScrubOptions = {}): Promise<HealReport> {
  healer.prepareScrub();
  const rows = liveChunks(env.db);
  const layouts = new Map<string, Layout>();
  const bytesOf = (r: LiveChunk): number => {
    let l = layouts.get(r.layoutText);
    if (l === undefined) layouts.set(r.layoutText, (l = parseLayout(r.layoutText)));
    return shardBytes(l, r.payloadLenBytes);
  };
  const totalBytes = rows.reduce((n, r) => n + bytesOf(r), 0);
  const total = emptyHealReport();
  const pacer = new Pacer(opts.rateBytesPerSec);
  let doneBytes = 0;
  opts.onProgress?.({ doneBytes, totalBytes, doneItems: 0, totalItems: rows.length });
  for (let i = 0; i < rows.length; i++) {
    if (opts.signal?.aborted === true) return { ...total, cancelled: true };
    const r = rows[i];
    add(total, await healer.healChunk(r.ino, r.chunkIndex, opts.repair ?? false, opts.onlyDisk));
    doneBytes += bytesOf(r);
    opts.onProgress?.({ doneBytes, totalBytes, doneItems: i + 1, totalItems: rows.length });
    await pacer.pace(doneBytes, opts.signal);
  }
  return total;
}
