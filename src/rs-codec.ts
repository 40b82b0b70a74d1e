// The Reed-Solomon codec interface (DESIGN.md §3, ec_algo = 1 "rs-vandermonde").
// Both the fast codec (src/rs.ts) and the reference (src/rs-reference.ts) implement it.

export interface RsCodec {
  readonly k: number;
  readonly m: number;
  /** m parity shards, each as long as the k equal-length data shards. */
  encode(data: readonly Uint8Array[]): Buffer[];
  /**
   * k+m entries, null = missing. Returns all k+m shards: present ones as Buffer
   * views of the caller's bytes (no copy), missing ones rebuilt. Throws
   * UnrecoverableError if more than m are missing, FormatError if lengths differ.
   */
  reconstruct(shards: readonly (Uint8Array | null)[]): Buffer[];
}
