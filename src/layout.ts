// Per-file storage policy strings: 'replica:R' or 'ec:K+M', then the chunk
// transforms, comma-separated (DESIGN §10): 'replica:3,zstd', 'ec:4+2,zstd,aes256gcm'.
// The parsed form carries the header echo fields (spec §3: ec_k, ec_m, ec_algo) so a
// Replica layout is k=1, m=0, algo=0 in shard headers (DESIGN §3).
import { EC_ALGO_NONE, EC_ALGO_RS_VANDERMONDE } from './header';
import {
  ChunkTransforms,
  NO_TRANSFORMS,
  TransformNameError,
  parseTransforms,
  transformNames,
} from './chunk-transforms';

export const REPLICAS_MAX = 16; // more copies than this is a typo, not a policy
export const EC_SHARDS_MAX = 256; // GF(2^8) Reed-Solomon: k+m <= 256

export type Layout =
  | { kind: 'replica'; replicas: number; text: string; transforms: ChunkTransforms }
  | { kind: 'ec'; k: number; m: number; text: string; transforms: ChunkTransforms };

export class LayoutError extends Error {
  readonly code = 'EINVAL';
  constructor(
    readonly layoutText: string,
    reason: string,
  ) {
    super(
      `invalid layout '${layoutText}': ${reason} (expected 'replica:R' or 'ec:K+M', then transforms: ',zstd', ',lz4', ',aes256gcm')`,
    );
  }
}

const REPLICA_RE = /^replica:([1-9][0-9]{0,2})$/;
const EC_RE = /^ec:([1-9][0-9]{0,2})\+([1-9][0-9]{0,2})$/;

export function parseLayout(text: string): Layout {
  const [placement, ...names] = text.split(',');
  let transforms = NO_TRANSFORMS;
  try {
    if (names.length > 0) transforms = parseTransforms(names);
  } catch (err) {
    if (err instanceof TransformNameError) throw new LayoutError(text, err.message);
    throw err;
  }
  // One spelling per layout: the text is compared (writes, pack classes) and shown as stored.
  const canonical = [placement, ...transformNames(transforms)].join(',');
  if (canonical !== text) throw new LayoutError(text, `write it as '${canonical}'`);
  const r = REPLICA_RE.exec(placement);
  if (r !== null) {
    const replicas = Number(r[1]);
    if (replicas > REPLICAS_MAX) throw new LayoutError(text, `at most ${REPLICAS_MAX} replicas`);
    return { kind: 'replica', replicas, text, transforms };
  }
  const e = EC_RE.exec(placement);
  if (e !== null) {
    const k = Number(e[1]);
    const m = Number(e[2]);
    if (k + m > EC_SHARDS_MAX) throw new LayoutError(text, `k+m must be <= ${EC_SHARDS_MAX}`);
    return { kind: 'ec', k, m, text, transforms };
  }
  throw new LayoutError(text, 'unrecognised form');
}

/** The layout text without its transforms ('ec:4+2,zstd' -> 'ec:4+2'). */
export function placementText(l: Layout): string {
  return l.text.split(',')[0];
}

/** Shard files per chunk: R for replica, K+M for EC. */
export function shardCount(l: Layout): number {
  return l.kind === 'replica' ? l.replicas : l.k + l.m;
}

/** Shards needed to read the chunk back: 1 replica, or K. */
export function dataShardCount(l: Layout): number {
  return l.kind === 'replica' ? 1 : l.k;
}

/**
 * Shards that must be durable before a whole-shard write counts as done: the shards
 * needed to read it back, and at least a majority (as MinIO's write quorum), so
 * replica:3 and ec:K+1 layouts keep accepting writes with one disk down; the
 * missing shards are queued for heal.
 */
export function writeQuorum(l: Layout): number {
  const n = shardCount(l);
  return Math.min(n, Math.max(dataShardCount(l), Math.floor(n / 2) + 1));
}

/** Header echo fields (spec §3): ec_k, ec_m, ec_algo. */
export function headerEcFields(l: Layout): { ecK: number; ecM: number; ecAlgo: number } {
  return l.kind === 'replica'
    ? { ecK: 1, ecM: 0, ecAlgo: EC_ALGO_NONE }
    : { ecK: l.k, ecM: l.m, ecAlgo: EC_ALGO_RS_VANDERMONDE };
}

/** Raw bytes stored per logical byte (statfs: usable = raw / overhead). */
export function overhead(l: Layout): number {
  return l.kind === 'replica' ? l.replicas : (l.k + l.m) / l.k;
}
