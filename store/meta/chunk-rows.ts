// The rows of the chunk map, the intents and the heal queue (DESIGN §4, §5, §6) as typed operations,
// never as SQL: store/meta/chunk-map.ts owns the rules over them (one view with a group's rows, the
// cache of committed rows, sealing and opening intent spans); an engine answers these with its own
// statements (sql/chunk-rows.ts for both SQL engines, which spell them alike but for one RETURNING).
import type { ChunkRow, HealEntry, Intent, StoredForm } from './chunk-map';

/** An intent as its row holds it: span sealed (a log record, DESIGN §10) when sealed, null in older builds' rows. */
export type IntentRow = Intent;

/** A new intent's columns (its id is the engine's). */
export interface NewIntent {
  ino: number;
  chunkIndex: number;
  version: bigint;
  firstBlock: number;
  lastBlock: number;
  createdNs: bigint;
  span: Buffer;
  sealed: boolean;
}

/** A sealed intent of one chunk, as a rebase re-seals it. */
export interface SealedIntent {
  id: number;
  version: bigint;
  firstBlock: number;
  record: Buffer;
}

/** One live chunk version (the recovery garbage scan). */
export interface LiveVersion {
  ino: bigint;
  chunkIndex: bigint;
  version: bigint;
}

/** A heal-queue row's key. */
export interface HealKey {
  ino: number;
  chunkIndex: number;
  version: bigint;
  shardIndex: number;
}

/** Live transformed chunks with the same flag bits: count, raw and stored bytes (status). */
export interface StoredCount {
  flags: number;
  chunks: number;
  rawBytes: number;
  storedBytes: number;
}

export interface ChunkRows {
  /** The chunk's row, undefined for none. */
  chunk(ino: number, chunkIndex: number): ChunkRow | undefined;
  /** The file's live chunks (version > 0) at index >= fromIndex, by index. */
  liveChunks(ino: number, fromIndex: number): ChunkRow[];
  /** A never-used version for the chunk (its row made if none, with no live data). */
  allocVersion(ino: number, chunkIndex: number): bigint;
  /** The chunk's live version; false when version was never allocated for it. */
  setLive(ino: number, chunkIndex: number, version: bigint, lenBytes: number, stored: StoredForm | null): boolean;
  /** The chunk holds no live data (its version numbers stay used). */
  retire(ino: number, chunkIndex: number): void;
  /** The inode's chunk rows and heal-queue rows. */
  dropInode(ino: number): void;
  storedCounts(): StoredCount[];
  /** Every live chunk version, read as the walk goes. */
  liveVersions(): IterableIterator<LiveVersion>;

  /** The intent's id, read when asked for (on some engines it comes back with the next round trip). */
  addIntent(i: NewIntent): () => number;
  dropIntentsOf(ino: number): void;
  dropIntentsOfChunk(ino: number, chunkIndex: number): void;
  /** The chunk's intents now go over version. */
  rebaseIntents(ino: number, chunkIndex: number, version: bigint): void;
  sealedIntentsOf(ino: number, chunkIndex: number): SealedIntent[];
  /** An intent's span, sealed again (for its new place). */
  reseal(id: number, record: Buffer): void;
  removeIntent(id: number): void;
  intentCount(): number;
  /** Every intent in log order (id). */
  intents(): IntentRow[];
  intentsOf(ino: number): IntentRow[];

  /** False when that shard was queued already. */
  queueHeal(key: HealKey, reason: string, queuedNs: bigint): boolean;
  unqueueHeal(key: HealKey): void;
  noteHealAttempt(key: HealKey): void;
  /** At most limit entries, fewest attempts first, then oldest. */
  healBatch(limit: number): HealEntry[];
  healQueueLength(): number;
}
