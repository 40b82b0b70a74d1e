// What the applier writes into a replica chunk's blocks (DESIGN §5): every block its pending intents
// touch, as the file shows it: the stored block (read from a replica that verifies) with the
// intents over it in log order. A block the intents cover whole is not read (intents rows hold
// whole blocks); intent log records hold exactly the bytes written, so their blocks are read here,
// off the fsync's path, many at once.
import { ChunkEnv } from './chunk-env';
import { ChunkRef } from './chunk-ref';
import { readStoredInto } from './chunk-io';
import { boundedAll } from './bounded';
import { PendingIntent, overlaySpans, uncoveredParts } from './intent-backlog';

/** Block reads of one fold in flight at once (their device waits overlap). */
const FOLD_READS_IN_FLIGHT_MAX = 8;

export interface BlockRun {
  firstBlock: number;
  span: Buffer;
}

/** Consecutive blocks as one run each (blocks: block index -> its bytes; a short last block stays short). */
export function blockRuns(blocks: ReadonlyMap<number, Buffer>): BlockRun[] {
  const runs: Array<{ firstBlock: number; parts: Buffer[] }> = [];
  for (const b of [...blocks.keys()].sort((x, y) => x - y)) {
    const last = runs[runs.length - 1];
    if (last !== undefined && last.firstBlock + last.parts.length === b) last.parts.push(blocks.get(b)!);
    else runs.push({ firstBlock: b, parts: [blocks.get(b)!] });
  }
  const joined = (parts: Buffer[]): Buffer => (parts.length === 1 ? parts[0] : Buffer.concat(parts));
  return runs.map((r) => ({ firstBlock: r.firstBlock, span: joined(r.parts) }));
}

/** The blocks the pending intents of ref's version touch. */
function touchedBlocks(ref: ChunkRef, pending: readonly PendingIntent[]): number[] {
  const bb = ref.fl.bitrotBlockBytes;
  const touched = new Set<number>();
  for (const i of pending) {
    if (i.version !== ref.version) continue;
    for (let b = Math.floor(i.offsetBytes / bb); b * bb < i.offsetBytes + i.span.length; b++) touched.add(b);
  }
  return [...touched];
}

/**
 * The stored bytes of the touched blocks the intents do not cover whole (verified, from a replica
 * that verifies). Only the applier changes a live version's blocks, one fold per chunk at a time,
 * so they may be read before the fold takes the inode's lock: writers are not held up meanwhile.
 */
export async function readStoredBlocks(
  env: ChunkEnv,
  ref: ChunkRef,
  pending: readonly PendingIntent[],
): Promise<Map<number, Buffer>> {
  const bb = ref.fl.bitrotBlockBytes;
  const stored = new Map<number, Buffer>();
  await boundedAll(touchedBlocks(ref, pending), FOLD_READS_IN_FLIGHT_MAX, async (b) => {
    const start = b * bb;
    const block = Buffer.alloc(Math.min(bb, ref.logicalLenBytes - start));
    if (uncoveredParts(pending, ref.version, start, block.length).length === 0) return;
    await readStoredInto(env, ref, start, block.length, block, 0, false);
    stored.set(b, block);
  });
  return stored;
}

/**
 * The new bytes of every block the pending intents of ref's version touch: the stored block (from
 * stored, read before, or read now) with the intents over it in log order. The intents are laid
 * over stored's buffers in place (no copy per block): they are read for this fold only.
 */
export async function foldRuns(
  env: ChunkEnv,
  ref: ChunkRef,
  pending: readonly PendingIntent[],
  stored?: Map<number, Buffer>,
): Promise<BlockRun[]> {
  const bb = ref.fl.bitrotBlockBytes;
  const blocks = new Map<number, Buffer>();
  await boundedAll(touchedBlocks(ref, pending), FOLD_READS_IN_FLIGHT_MAX, async (b) => {
    const start = b * bb;
    const before = stored?.get(b);
    const block = before ?? Buffer.alloc(Math.min(bb, ref.logicalLenBytes - start));
    if (before === undefined && uncoveredParts(pending, ref.version, start, block.length).length > 0) {
      await readStoredInto(env, ref, start, block.length, block, 0, false);
    }
    overlaySpans(pending, ref.version, start, block.length, block, 0);
    blocks.set(b, block);
  });
  return blockRuns(blocks);
}
