// A chunk through its layout's transforms (spec §3.1 bits 1, 2; DESIGN §10). Whole writes encode
// the content once (compressed when that saves space, then encrypted) and the payload is what the
// shards hold; reads verify the stored payload first (spec §9: every shard read is verified), then
// decrypt (the GCM tag checked before any byte is used), then decompress, on the codec threads
// (store/chunks/codec-pool.ts), which also encode whole chunks being written. A decoded chunk is kept in a bounded cache, so small reads of one
// compressed chunk decode it once, and a sequential reader finds the next chunks decoded ahead.
import { LRUCache } from 'lru-cache';
import { EncodedPayload, decodePayloadInto, encodePayload } from '../../src/chunk-codec';
import { ChunkIdentity, DecryptError } from '../../src/chunk-cipher';
import { hasTransforms } from '../../src/chunk-transforms';
import { assert } from '../../src/errors';
import { ChunkEnv, noteServedAround, noteShardFailure, readOrder } from './chunk-env';
import { ChunkRef, payloadLen, siteOf, versionKeyOf } from './chunk-ref';
import { readEcInto, readEcPayload } from './ec-chunk';
import { shardCount } from '../../src/layout';
import { readSegmentsInto, segmentCandidate, SegmentLayouts } from './segment-read';
import { Maybe, isPromise } from './maybe-async';
import { boundedAll } from './bounded';
import { readReplicaInto } from './replica-chunk';
import { CodecPool } from './codec-pool';

/** Decoded chunks kept for small reads: 16 chunks of 4 MiB. */
const DECODED_BYTES_MAX = 64 << 20;
/** Files whose last read end is remembered (sequential readers, for read-ahead). */
const READERS_TRACKED_MAX = 1024;
/**
 * A read starting this close to the previous read's end is sequential: the kernel's read-ahead
 * sends a sequential reader's requests concurrently, so they may arrive a little out of order.
 */
const SEQUENTIAL_SLACK_BYTES = 256 << 10; // two FUSE requests of 128 KiB

/** The decoded chunks, and the decodes in flight (concurrent readers of one chunk share one). */
export class DecodedChunks {
  /**
   * An evicted chunk's buffer goes back to the pool on the next turn of the event loop: readers
   * that got it from load() copy from it in the microtasks of the turn it was decoded in.
   */
  private readonly done = new LRUCache<string, Buffer>({
    maxSize: DECODED_BYTES_MAX,
    sizeCalculation: (b) => Math.max(1, b.length),
    dispose: (raw) => setImmediate(() => this.pool.give(raw)),
  });
  private readonly pending = new Map<string, Promise<Buffer>>();
  /** ino -> the file offset its last read ended at. */
  private readonly lastEnd = new LRUCache<number, number>({ max: READERS_TRACKED_MAX });
  readonly pool: CodecPool;
  /** Cipher formats of encrypted chunks read by segments (store/chunks/segment-read.ts). */
  readonly segments = new SegmentLayouts();
  /** The transport asked for read grants (store/chunks/read-grant.ts): it answers granted chunks in C. */
  grantsAsked = false;

  constructor(storeKey: Buffer | null) {
    this.pool = new CodecPool(storeKey);
  }

  /**
   * A read of file bytes [offset, end) of ino: true when it starts near where the file's previous
   * read ended (sequential); records its end. By bytes, not chunks: a random reader of a file of 32
   * chunks lands in the chunk of its previous read (or the next) one time in 16, and each such read
   * taken for sequential decoded 4 MiB chunks ahead.
   */
  sequential(ino: number, offsetBytes: number, endBytes: number): boolean {
    const s = this.wouldBeSequential(ino, offsetBytes);
    this.lastEnd.set(ino, endBytes);
    return s;
  }

  /** Peek, without recording: a read of ino starting at offsetBytes would be sequential. */
  wouldBeSequential(ino: number, offsetBytes: number): boolean {
    const last = this.lastEnd.peek(ino);
    return last !== undefined && Math.abs(offsetBytes - last) <= SEQUENTIAL_SLACK_BYTES;
  }

  /** A decode of the chunk is in flight (a read-ahead): a reader waits for it. */
  decoding(ref: ChunkRef): boolean {
    return this.pending.has(versionKeyOf(ref));
  }

  get(ref: ChunkRef): Buffer | undefined {
    return this.done.get(versionKeyOf(ref));
  }
  /** The chunk's raw bytes: cached, or decoded once by decode(). */
  load(ref: ChunkRef, decode: () => Promise<Buffer>): Promise<Buffer> {
    const key = versionKeyOf(ref);
    let p = this.pending.get(key);
    if (p === undefined) {
      p = decode()
        .then((raw) => {
          if (raw.length <= DECODED_BYTES_MAX / 4) this.done.set(key, raw);
          return raw;
        })
        .finally(() => this.pending.delete(key));
      this.pending.set(key, p);
    }
    return p;
  }
}

/**
 * The stored payload of a whole write and the ref that describes it (stored form set when
 * transformed). alloc: the buffer an encrypted payload is sealed into.
 */
export function encodeChunk(
  env: ChunkEnv,
  ref: ChunkRef,
  content: Uint8Array,
  alloc?: (lengthBytes: number) => Buffer,
): { ref: ChunkRef; payload: Uint8Array } {
  const t = ref.fl.layout.transforms;
  if (!hasTransforms(t)) return { ref, payload: content };
  return encodedRef(ref, content, encodePayload(t, content, identityOf(ref), env.storeKey, alloc));
}

/**
 * encodeChunk on a codec thread when it compresses and the chunk is large enough to pay for the
 * hand-off (a 4 MiB chunk's zstd takes about 10 ms, during which the mount answers other
 * requests), else inline. Encryption alone stays inline: sealing 4 MiB takes about 3 ms, and on a
 * codec thread sequential writes of `replica:3,aes256gcm` ran 0.64x (fio, 4 rounds, 5 Dec).
 * alloc must give pooled shared memory (CodecPool.takePayload) for the payload to be made there.
 */
export async function encodeChunkOffThread(
  env: ChunkEnv,
  ref: ChunkRef,
  content: Uint8Array,
  alloc: (lengthBytes: number) => Buffer,
): Promise<{ ref: ChunkRef; payload: Uint8Array }> {
  const t = ref.fl.layout.transforms;
  if (!hasTransforms(t)) return { ref, payload: content };
  if (t.compression === null || (t.encryption !== null && env.storeKey === null))
    return encodeChunk(env, ref, content, alloc); // the latter throws the FormatError naming the key
  const off = env.decoded.pool.encode(t, content, identityOf(ref), siteOf(ref), alloc);
  if (off === null) return encodeChunk(env, ref, content, alloc);
  return encodedRef(ref, content, await off);
}

function encodedRef(ref: ChunkRef, content: Uint8Array, e: EncodedPayload): { ref: ChunkRef; payload: Uint8Array } {
  if (e.flags === 0) return { ref: { ...ref, stored: null }, payload: content }; // incompressible: raw, flags clear
  return { ref: { ...ref, stored: { lenBytes: e.stored.length, flags: e.flags } }, payload: e.stored };
}

/** A stored payload is read in pieces this long, each straight into the payload buffer where whole bitrot blocks. */
const PAYLOAD_PIECE_BYTES = 512 << 10;
/** Pieces of one payload read at once. */
const PAYLOAD_PIECES_IN_FLIGHT_MAX = 4;

/** The whole verified stored payload into out, by layout (failover and reconstruction per piece, as for any read). */
function readPayloadInto(env: ChunkEnv, ref: ChunkRef, out: Buffer): Promise<void> {
  assert(out.length === payloadLen(ref), 'payload buffer is the stored payload length');
  const starts: number[] = [];
  for (let at = 0; at < out.length; at += PAYLOAD_PIECE_BYTES) starts.push(at);
  return boundedAll(starts, PAYLOAD_PIECES_IN_FLIGHT_MAX, async (at) => {
    const n = Math.min(PAYLOAD_PIECE_BYTES, out.length - at);
    await (ref.fl.layout.kind === 'replica'
      ? readReplicaInto(env, ref, at, n, out, at, false, true) // straight into out: no reader sees it before it verified and decoded
      : readEcInto(env, ref, at, n, out, at, false, true));
  });
}

function identityOf(ref: ChunkRef): ChunkIdentity {
  return { fileId: ref.fileId, chunkIndex: BigInt(ref.chunkIndex), version: ref.version };
}

/**
 * A replica chunk whose payload passed its hashes but failed its GCM tag (a replica rewritten with
 * fresh hashes, store/upkeep/tag-check.ts): each replica's whole payload in read order, the first
 * whose tag checks decoded into raw, the others counted and queued for heal. Rare: fresh buffers.
 */
async function decodeFromReplicas(env: ChunkEnv, ref: ChunkRef, raw: Buffer, first: DecryptError): Promise<void> {
  for (const i of readOrder(
    env,
    ref,
    ref.diskIds.map((_, j) => j),
  )) {
    let payload: Buffer;
    try {
      payload = await env.shards.readVerified(ref, i, 0, payloadLen(ref));
    } catch (err) {
      noteShardFailure(env, ref, i, err);
      continue;
    }
    try {
      decodePayloadInto(
        ref.fl.layout.transforms,
        ref.stored!.flags,
        payload,
        raw,
        identityOf(ref),
        env.storeKey,
        siteOf(ref, i),
        (n) => Buffer.allocUnsafe(n),
      );
      noteServedAround(env); // the first decode (of the replica read first) failed its tag
      return;
    } catch (err) {
      if (!(err instanceof DecryptError)) throw err;
      noteShardFailure(env, ref, i, err);
      // Its hashes pass: without this a read grant could be made on it again (its header and table
      // cached) and fail the tag in C on every read until heal rewrites it (fs/fuse/read-grants.ts).
      env.shards.forgetHeader(ref, i);
    }
  }
  throw first;
}

/**
 * An EC chunk whose payload passed its hashes but failed its tag: the payload rebuilt leaving out
 * each shard in turn (store/chunks/ec-chunk.ts readEcPayload); the shard without which it
 * authenticates is counted and queued for heal (rebuilt from the others), its payload decoded into
 * raw. Rare: fresh buffers, up to k+m rebuilds.
 */
async function decodeFromEcShards(env: ChunkEnv, ref: ChunkRef, raw: Buffer, first: DecryptError): Promise<void> {
  for (let j = 0; j < shardCount(ref.fl.layout); j++) {
    let payload: Buffer;
    try {
      payload = await readEcPayload(env, ref, j);
    } catch {
      continue; // not enough other shards verify: j cannot be left out
    }
    try {
      decodePayloadInto(
        ref.fl.layout.transforms,
        ref.stored!.flags,
        payload,
        raw,
        identityOf(ref),
        env.storeKey,
        siteOf(ref, j),
        (n) => Buffer.allocUnsafe(n),
      );
    } catch (err) {
      if (!(err instanceof DecryptError)) throw err;
      continue;
    }
    noteShardFailure(env, ref, j, first);
    env.counters.bump('failovers');
    noteServedAround(env);
    return;
  }
  throw first;
}

/**
 * The raw bytes of a transformed chunk: its verified payload (spec §9), decoded. ahead: a read-ahead
 * decode, on a decode thread (it overlaps the reader's requests); a reader waiting for the chunk
 * decodes on this thread (two thread hand-offs cost a waiting random reader more than they save).
 */
async function decodeChunk(env: ChunkEnv, ref: ChunkRef, ahead: boolean): Promise<Buffer> {
  const pool = env.decoded.pool;
  const stored = pool.takePayload(payloadLen(ref));
  const raw = pool.takeRaw(ref.logicalLenBytes);
  try {
    await readPayloadInto(env, ref, stored);
    try {
      await pool.decode(ref.fl.layout.transforms, ref.stored!.flags, stored, raw, identityOf(ref), siteOf(ref), ahead);
    } catch (err) {
      if (!(err instanceof DecryptError)) throw err;
      await (ref.fl.layout.kind === 'replica'
        ? decodeFromReplicas(env, ref, raw, err)
        : decodeFromEcShards(env, ref, raw, err));
    }
    return raw;
  } catch (err) {
    pool.give(raw); // no reader got it
    throw err;
  } finally {
    pool.give(stored);
  }
}

/**
 * Read-ahead for sequential readers: decode a transformed chunk in the background, before the
 * reader asks for it. Failures are left to the read that needs the
 * chunk: it reads again, fails over and reports as usual.
 */
export function prefetchDecoded(env: ChunkEnv, ref: ChunkRef): void {
  if (ref.stored === null || grantable(env, ref) || env.decoded.get(ref) !== undefined) return;
  env.decoded.load(ref, () => decodeChunk(env, ref, true)).catch(() => undefined);
}

/**
 * The transport answers this chunk's reads in C once it is granted (an encrypted chunk, replica or
 * EC, store/chunks/read-grant.ts), opening only the segments each read covers: a sequential reader reads
 * it by segments like a random one, as a raw chunk is read (the kernel's read-ahead asks for its
 * ranges). Decoding it whole ahead would verify and decrypt it twice, once for nobody.
 */
function grantable(env: ChunkEnv, ref: ChunkRef): boolean {
  return env.decoded.grantsAsked && segmentCandidate(env, ref);
}

/** Raw chunk range of a transformed chunk into target: from the decoded cache when it holds the chunk. */
export function readDecodedInto(
  env: ChunkEnv,
  ref: ChunkRef,
  offsetBytes: number,
  lengthBytes: number,
  target: Buffer,
  targetOffset: number,
): Maybe<void> {
  assert(ref.stored !== null, 'a decoded read of a transformed chunk');
  assert(offsetBytes + lengthBytes <= ref.logicalLenBytes, 'decoded read inside the chunk content');
  const copy = (raw: Buffer): void => {
    raw.copy(target, targetOffset, offsetBytes, offsetBytes + lengthBytes);
  };
  const hit = env.decoded.get(ref);
  if (hit !== undefined) return copy(hit);
  const whole = (): Promise<void> => env.decoded.load(ref, () => decodeChunk(env, ref, false)).then(copy);
  // A random read of an encrypted, uncompressed chunk decrypts only its segments (cipher format v2);
  // a sequential reader decodes whole chunks ahead on the decode threads (read-ahead, range-read.ts):
  // measured in one fio run (4 Dec), sequential reads by segments on the JavaScript thread ran at 84
  // MiB/s against 121 for whole chunks decoded ahead (replica:3,aes256gcm; random reads the same).
  const sequential =
    !grantable(env, ref) &&
    env.decoded.wouldBeSequential(ref.ino, ref.chunkIndex * ref.fl.chunkSizeBytes + offsetBytes);
  if (lengthBytes === 0 || !segmentCandidate(env, ref) || env.decoded.decoding(ref) || sequential) return whole();
  return readSegmentsInto(env, ref, versionKeyOf(ref), offsetBytes, lengthBytes, target, targetOffset).then(
    (done) => (done ? undefined : whole()),
    (err: unknown) => {
      if (!(err instanceof DecryptError)) throw err;
      return whole(); // a segment failed its tag although its hashes passed: the whole decode fails over
    },
  );
}
