// Fast Reed-Solomon "rs-vandermonde" codec (DESIGN.md §3, ec_algo = 1): the
// Backblaze systematic Vandermonde code over GF(2^8)/0x11D, byte-identical to
// klauspost/reedsolomon. The byte work runs in the native SIMD kernels
// (native/rs/: GFNI, AVX-512/AVX2/SSSE3 split-table pshufb, scalar fallback);
// this file picks coefficients. src/rs-reference.ts is the slow cross-check.
import { LRUCache } from 'lru-cache';
import { FormatError, assert } from './errors';
import { gfMul } from './gf256';
import type { RsCodec } from './rs-codec';
import { codingMatrix, matInvert, type Matrix } from './rs-matrix';
import { rsNative } from './rs-native';
import { asBuffer, checkDataShards, checkNoOverlap, checkShardSet, checkWanted } from './rs-shards';

export type { RsCodec } from './rs-codec';
export { codingMatrix } from './rs-matrix';

export interface RsFastCodec extends RsCodec {
  /** Like encode, but writes the m parity shards into caller buffers (each >= data length). */
  encodeInto(data: readonly Uint8Array[], parity: readonly Uint8Array[]): void;
  /**
   * Returns only the `wanted` shards (in that order), rebuilding those that are
   * null from any k present ones. Present wanted shards come back as views (or
   * copied into `outputs` when given); `outputs[i]`, if given, receives wanted[i]
   * and must hold at least the shard length. Reads use this to rebuild just the
   * data shards a range needs (DESIGN.md §6).
   */
  reconstructSome(
    shards: readonly (Uint8Array | null)[],
    wanted: readonly number[],
    outputs?: readonly Uint8Array[],
  ): Buffer[];
}

/** Decode matrices per (survivors, rebuilt) pattern; a stripe sees few patterns. */
const DECODE_CACHE_ENTRIES_MAX = 256;
/** Codecs per (k, m); layouts in one store are few. */
const CODEC_CACHE_ENTRIES_MAX = 64;

/** Flattens rows into the row-major byte string the native kernel takes. */
function flatten(rows: Matrix): Uint8Array {
  const cols = rows[0].length;
  const out = new Uint8Array(rows.length * cols);
  rows.forEach((row, r) => out.set(row, r * cols));
  return out;
}

/** rowVector × matrix over GF(2^8). */
function rowTimes(row: Uint8Array, matrix: Matrix): Uint8Array {
  const out = new Uint8Array(matrix[0].length);
  for (let i = 0; i < row.length; i++) {
    if (row[i] === 0) continue;
    for (let c = 0; c < out.length; c++) out[c] ^= gfMul(row[i], matrix[i][c]);
  }
  return out;
}

class FastCodec implements RsFastCodec {
  private readonly matrix: Matrix;
  private readonly parityCoef: Uint8Array;
  private readonly decodeCache = new LRUCache<string, Uint8Array>({ max: DECODE_CACHE_ENTRIES_MAX });

  constructor(
    readonly k: number,
    readonly m: number,
  ) {
    this.matrix = codingMatrix(k, m);
    this.parityCoef = m > 0 ? flatten(this.matrix.slice(k)) : new Uint8Array(0);
  }

  encode(data: readonly Uint8Array[]): Buffer[] {
    const lengthBytes = checkDataShards(this.k, data);
    const parity = Array.from({ length: this.m }, () => Buffer.allocUnsafe(lengthBytes));
    this.encodeInto(data, parity);
    return parity;
  }

  encodeInto(data: readonly Uint8Array[], parity: readonly Uint8Array[]): void {
    const lengthBytes = checkDataShards(this.k, data);
    checkOutputs(parity, this.m, lengthBytes);
    checkNoOverlap(parity, data, lengthBytes);
    if (this.m === 0 || lengthBytes === 0) return;
    rsNative().mulMatrix(this.parityCoef, this.m, this.k, data, parity, lengthBytes);
  }

  reconstruct(shards: readonly (Uint8Array | null)[]): Buffer[] {
    const set = checkShardSet(this.k, this.m, shards);
    const out = shards.map((s) => (s === null ? Buffer.alloc(0) : asBuffer(s)));
    if (set.missing.length === 0) return out;
    const rebuilt = this.reconstructSome(shards, set.missing);
    set.missing.forEach((index, i) => (out[index] = rebuilt[i]));
    return out;
  }

  reconstructSome(
    shards: readonly (Uint8Array | null)[],
    wanted: readonly number[],
    outputs?: readonly Uint8Array[],
  ): Buffer[] {
    const set = checkShardSet(this.k, this.m, shards);
    checkWanted(this.k, this.m, wanted);
    const lengthBytes = set.lengthBytes;
    if (outputs !== undefined) checkOutputs(outputs, wanted.length, lengthBytes);
    const result: Buffer[] = [];
    const rebuildIndices: number[] = []; // shards to compute, in wanted order
    const targets: Buffer[] = [];
    for (let i = 0; i < wanted.length; i++) {
      const shard = shards[wanted[i]];
      let out: Buffer;
      if (outputs !== undefined) {
        out = asBuffer(outputs[i]);
        if (out.length !== lengthBytes) out = out.subarray(0, lengthBytes);
        if (shard !== null) out.set(shard);
      } else {
        out = shard === null ? Buffer.allocUnsafe(lengthBytes) : asBuffer(shard);
      }
      if (shard === null) {
        rebuildIndices.push(wanted[i]);
        targets.push(out);
      }
      result.push(out);
    }
    if (targets.length === 0 || lengthBytes === 0) return result;
    // Any k present shards determine the stripe; take the first k (data first).
    const survivors = set.present.slice(0, this.k);
    const inputs = survivors.map((s) => shards[s] as Uint8Array);
    if (outputs !== undefined) checkNoOverlap(targets, inputs, lengthBytes);
    const coef = this.decodeRows(survivors, rebuildIndices);
    rsNative().mulMatrix(coef, targets.length, this.k, inputs, targets, lengthBytes);
    return result;
  }

  /** Rows expressing each missing shard as a combination of the survivors. */
  private decodeRows(survivors: readonly number[], missing: readonly number[]): Uint8Array {
    const key = `${survivors.join(',')}|${missing.join(',')}`;
    const cached = this.decodeCache.get(key);
    if (cached !== undefined) return cached;
    assert(survivors.length === this.k, 'decode uses exactly k survivors');
    // inverse maps survivor shards to data shards; a parity row is its coding row times that.
    const inverse = matInvert(survivors.map((s) => this.matrix[s]));
    const rows = missing.map((w) => (w < this.k ? inverse[w] : rowTimes(this.matrix[w], inverse)));
    const coef = flatten(rows);
    this.decodeCache.set(key, coef);
    return coef;
  }
}

function checkOutputs(outputs: readonly Uint8Array[], count: number, lengthBytes: number): void {
  if (outputs.length !== count)
    throw new FormatError('shard_count', `expected ${count} output buffers, got ${outputs.length}`);
  outputs.forEach((o, i) => {
    if (o.length < lengthBytes) {
      throw new FormatError('shard_length', `output buffer ${i} has ${o.length} bytes, needs ${lengthBytes}`);
    }
  });
}

const codecs = new LRUCache<string, FastCodec>({ max: CODEC_CACHE_ENTRIES_MAX });

/** The fast codec for (k, m); instances are shared and stateless apart from caches. */
export function rsCodec(k: number, m: number): RsFastCodec {
  const key = `${k}+${m}`;
  let codec = codecs.get(key);
  if (codec === undefined) {
    codec = new FastCodec(k, m);
    codecs.set(key, codec);
  }
  return codec;
}

/** The SIMD level the kernels run at ("gfni", "avx512", "avx2", "ssse3" or "scalar"). */
export function rsSimdLevel(): string {
  return rsNative().simdLevel();
}

/** Forces a lower SIMD level (tests and benchmarks); clamped to the CPU. Returns the level set. */
export function setRsSimdLevel(level: string): string {
  return rsNative().setSimdLevel(level);
}

/** The best level this CPU supports. */
export function rsDetectedSimdLevel(): string {
  return rsNative().detectedSimdLevel();
}
