// Reference Reed-Solomon "rs-vandermonde" codec (DESIGN.md §3): plain byte loops
// over log/exp tables, written to be obviously correct. Used by tests and the
// golden-vector generator to check the fast SIMD codec (src/rs.ts); slow.
import type { RsCodec } from './rs-codec';
import { gfMul } from './gf256';
import { codingMatrix, matInvert, type Matrix } from './rs-matrix';
import { asBuffer, checkDataShards, checkShardSet } from './rs-shards';

/** out = sum over j of row[j] * inputs[j] (GF(2^8) dot product per byte). */
function combine(row: Uint8Array, inputs: readonly Uint8Array[], lengthBytes: number): Buffer {
  const out = Buffer.alloc(lengthBytes);
  for (let j = 0; j < inputs.length; j++) {
    const coefficient = row[j];
    if (coefficient === 0) continue;
    const input = inputs[j];
    for (let b = 0; b < lengthBytes; b++) out[b] ^= gfMul(coefficient, input[b]);
  }
  return out;
}

export function rsReferenceCodec(k: number, m: number): RsCodec {
  const matrix: Matrix = codingMatrix(k, m);

  function encode(data: readonly Uint8Array[]): Buffer[] {
    const lengthBytes = checkDataShards(k, data);
    const parity: Buffer[] = [];
    for (let p = 0; p < m; p++) parity.push(combine(matrix[k + p], data, lengthBytes));
    return parity;
  }

  function reconstruct(shards: readonly (Uint8Array | null)[]): Buffer[] {
    const set = checkShardSet(k, m, shards);
    const out: Buffer[] = shards.map((s) => (s === null ? Buffer.alloc(0) : asBuffer(s)));
    if (set.missing.length === 0) return out;
    // Any k rows of the coding matrix are invertible: solve for the data shards
    // from the first k present shards, then re-encode missing parity.
    const rows = set.present.slice(0, k);
    const decode = matInvert(rows.map((r) => matrix[r]));
    const survivors = rows.map((r) => shards[r] as Uint8Array);
    const data: Buffer[] = [];
    for (let d = 0; d < k; d++) {
      data.push(shards[d] === null ? combine(decode[d], survivors, set.lengthBytes) : out[d]);
    }
    for (const i of set.missing) out[i] = i < k ? data[i] : combine(matrix[i], data, set.lengthBytes);
    return out;
  }

  return { k, m, encode, reconstruct };
}
