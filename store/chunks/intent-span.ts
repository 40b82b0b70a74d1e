// The span a journaled intent holds (DESIGN §5): the whole bitrot blocks a partial write touches,
// old bytes (as the file shows them: stored, with earlier pending intents over them) with the new
// bytes merged in. Replica spans are patched in place (§8.2); EC spans are rewritten into a new
// version of the chunk (EC never updates a stripe in place). For an EC chunk the blocks are
// logical: bitrot-block-sized pieces of the chunk's content, not of a shard.
import { assert } from '../../src/errors';
import { ChunkEnv } from './chunk-env';
import { readChunkInto } from './chunk-io';
import { ChunkRef } from './chunk-ref';

/** A partial write journals its whole block span in the intent row: at most this much (DESIGN §5). */
export const INTENT_SPAN_BYTES_MAX = 1 << 20;

/** Block-aligned span [first*bb, min((last+1)*bb, L)) that a chunk range touches. */
export function blockSpan(
  ref: ChunkRef,
  offsetBytes: number,
  lengthBytes: number,
): { first: number; last: number; start: number; end: number } {
  const bb = ref.fl.bitrotBlockBytes;
  const first = Math.floor(offsetBytes / bb);
  const last = Math.floor((offsetBytes + lengthBytes - 1) / bb);
  return { first, last, start: first * bb, end: Math.min((last + 1) * bb, ref.logicalLenBytes) };
}

/** §8.2 steps 1-2: the span's current bytes (verified, with failover, one view) with data merged in. */
/** inline: as for readChunkInto (a lone span may be read on this thread; several go to the pool together). */
export async function mergedSpan(
  env: ChunkEnv,
  ref: ChunkRef,
  offsetBytes: number,
  data: Uint8Array,
  inline: boolean,
): Promise<{ firstBlock: number; span: Buffer }> {
  assert(
    data.length > 0 && offsetBytes + data.length <= ref.logicalLenBytes,
    'a journaled span stays inside the chunk',
  );
  const s = blockSpan(ref, offsetBytes, data.length);
  const span = Buffer.allocUnsafe(s.end - s.start);
  // A span wholly overwritten needs no read (the common aligned write).
  if (offsetBytes !== s.start || offsetBytes + data.length !== s.end)
    await readChunkInto(env, ref, s.start, s.end - s.start, span, 0, inline);
  span.set(data, offsetBytes - s.start);
  return { firstBlock: s.first, span };
}
