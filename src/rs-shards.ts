// Shard-set checks shared by the Reed-Solomon codecs (DESIGN.md §3): every
// shard of a stripe has the same length, and at most m may be missing.
import { FormatError, UnrecoverableError } from './errors';

export interface ShardSet {
  lengthBytes: number;
  /** Indices of present shards, ascending. */
  present: number[];
  /** Indices of missing (null) shards, ascending. */
  missing: number[];
}

export function checkDataShards(k: number, data: readonly Uint8Array[]): number {
  if (data.length !== k) throw new FormatError('shard_count', `expected ${k} data shards, got ${data.length}`);
  const lengthBytes = data[0].length;
  for (let i = 1; i < k; i++) {
    if (data[i].length !== lengthBytes) {
      throw new FormatError('shard_length', `data shard ${i} has ${data[i].length} bytes, shard 0 has ${lengthBytes}`, {
        shardIndex: i,
      });
    }
  }
  return lengthBytes;
}

export function checkShardSet(k: number, m: number, shards: readonly (Uint8Array | null)[]): ShardSet {
  if (shards.length !== k + m) {
    throw new FormatError('shard_count', `expected ${k + m} shards (k=${k}, m=${m}), got ${shards.length}`);
  }
  const present: number[] = [];
  const missing: number[] = [];
  let lengthBytes = -1;
  for (let i = 0; i < shards.length; i++) {
    const shard = shards[i];
    if (shard === null || shard === undefined) {
      missing.push(i);
      continue;
    }
    if (lengthBytes === -1) lengthBytes = shard.length;
    if (shard.length !== lengthBytes) {
      throw new FormatError('shard_length', `shard ${i} has ${shard.length} bytes, others have ${lengthBytes}`, {
        shardIndex: i,
      });
    }
    present.push(i);
  }
  if (missing.length > m) {
    throw new UnrecoverableError(
      `reed-solomon: ${missing.length} of ${k + m} shards missing, at most ${m} can be rebuilt`,
      {},
      missing,
    );
  }
  return { lengthBytes, present, missing };
}

export function checkWanted(k: number, m: number, wanted: readonly number[]): void {
  for (const w of wanted) {
    if (!Number.isInteger(w) || w < 0 || w >= k + m) {
      throw new FormatError('shard_index', `wanted shard ${w} is outside 0..${k + m - 1}`);
    }
  }
  if (new Set(wanted).size !== wanted.length)
    throw new FormatError('shard_index', `wanted shards repeat: [${wanted.join(', ')}]`);
}

/** Caller output buffers must not share bytes with the inputs (the kernel reads while it writes). */
export function checkNoOverlap(
  outputs: readonly Uint8Array[],
  inputs: readonly Uint8Array[],
  lengthBytes: number,
): void {
  for (let i = 0; i < outputs.length; i++) {
    const o = outputs[i];
    for (let j = 0; j < inputs.length + i; j++) {
      const other = j < inputs.length ? inputs[j] : outputs[j - inputs.length];
      const overlaps =
        o.buffer === other.buffer &&
        o.byteOffset < other.byteOffset + lengthBytes &&
        other.byteOffset < o.byteOffset + lengthBytes;
      if (overlaps) throw new FormatError('output_buffer', `output buffer ${i} overlaps another shard buffer`);
    }
  }
}

/** A Buffer over the caller's bytes, without copying. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}
