// Matrices over GF(2^8) for Reed-Solomon "rs-vandermonde" (DESIGN.md §3):
// the Backblaze systematic construction V * inverse(top k×k of V), where
// V[r][c] = r^c over (k+m)×k. Rows are Uint8Array of length = columns.
import { FormatError, assert } from './errors';
import { gfDiv, gfMul, gfPow } from './gf256';

export type Matrix = Uint8Array[];

/** Limits: k+m shards must have distinct evaluation points r in 0..255. */
export const RS_SHARDS_MAX = 256;

export function checkRsParams(k: number, m: number): void {
  if (!Number.isInteger(k) || k < 1) throw new FormatError('ec_k', `must be an integer >= 1, got ${k}`);
  if (!Number.isInteger(m) || m < 0) throw new FormatError('ec_m', `must be an integer >= 0, got ${m}`);
  if (k + m > RS_SHARDS_MAX) throw new FormatError('ec_m', `k+m must be <= ${RS_SHARDS_MAX}, got ${k + m}`);
}

export function vandermonde(rows: number, cols: number): Matrix {
  const v: Matrix = [];
  for (let r = 0; r < rows; r++) {
    const row = new Uint8Array(cols);
    for (let c = 0; c < cols; c++) row[c] = gfPow(r, c);
    v.push(row);
  }
  return v;
}

export function matMul(a: Matrix, b: Matrix): Matrix {
  const inner = b.length;
  const cols = inner === 0 ? 0 : b[0].length;
  return a.map((rowA) => {
    assert(rowA.length === inner, 'matMul: inner dimensions agree');
    const out = new Uint8Array(cols);
    for (let c = 0; c < cols; c++) {
      let acc = 0;
      for (let i = 0; i < inner; i++) acc ^= gfMul(rowA[i], b[i][c]);
      out[c] = acc;
    }
    return out;
  });
}

/** Gauss-Jordan inverse of a square matrix; throws if singular (a bug for RS). */
export function matInvert(input: Matrix): Matrix {
  const n = input.length;
  // Augmented [A | I], reduced in place.
  const work = input.map((row, r) => {
    assert(row.length === n, 'matInvert: matrix is square');
    const aug = new Uint8Array(2 * n);
    aug.set(row, 0);
    aug[n + r] = 1;
    return aug;
  });
  for (let col = 0; col < n; col++) {
    let pivot = col;
    while (pivot < n && work[pivot][col] === 0) pivot++;
    assert(pivot < n, 'matInvert: matrix is not singular');
    [work[col], work[pivot]] = [work[pivot], work[col]];
    const scale = gfDiv(1, work[col][col]);
    for (let c = 0; c < 2 * n; c++) work[col][c] = gfMul(work[col][c], scale);
    for (let r = 0; r < n; r++) {
      const factor = work[r][col];
      if (r === col || factor === 0) continue;
      for (let c = 0; c < 2 * n; c++) work[r][c] ^= gfMul(factor, work[col][c]);
    }
  }
  return work.map((aug) => aug.slice(n));
}

/** The (k+m)×k systematic coding matrix; rows 0..k-1 are the identity. */
export function codingMatrix(k: number, m: number): Matrix {
  checkRsParams(k, m);
  const v = vandermonde(k + m, k);
  const topInverse = matInvert(v.slice(0, k));
  const coding = matMul(v, topInverse);
  for (let r = 0; r < k; r++) {
    for (let c = 0; c < k; c++) assert(coding[r][c] === (r === c ? 1 : 0), 'coding matrix is systematic');
  }
  return coding;
}
