// An EC or transformed chunk's pending intents (or a replica chunk's whose in-place patch failed) applied as one
// new version of the chunk (DESIGN §5; copy-on-write, spec §8.1: EC never updates a stripe in
// place). The inode's lock is held only to take a snapshot and to commit, not while 4 MiB are read,
// encoded and written: writers and readers of the file go on meanwhile (measured: holding it made
// every fsync'd write to an ec:4+2 file wait for a whole-chunk rewrite, 16 writes/s). At the commit,
// intents logged during the rewrite stay pending, moved onto the new version (rebased): their
// spans go over it exactly as they went over the old one (intent log records are logged again over
// it, relogOnto). If the chunk was replaced or dropped
// meanwhile, the new version is abandoned (it stays queued for reclaim, as reserved).
import { assert } from '../../src/errors';
import { crc32c } from '../../src/crc32c';
import { ChunkEnv } from './chunk-env';
import { readStoredInto, writeWholeChunk } from './chunk-io';
import { ChunkRef } from './chunk-ref';
import { ChunkRefs } from './chunk-writer';
import { logRecordId, overlaySpans } from './intent-backlog';
import { boundedAll } from './bounded';
import { WriteSyncs } from './tx-group';
import type { StoredForm } from '../meta/chunk-map';

/** The stored chunk is read in pieces this long (an EC piece: one 256 KiB shard range per data shard for ec:4+2). */
const REWRITE_PIECE_BYTES = 512 << 10;
/** Pieces read at once (their device waits overlap). */
const REWRITE_PIECES_IN_FLIGHT_MAX = 4;

export interface RewriteHost extends ChunkRefs {
  /** fn under the inode's lock with chunk c's live ref (null: a hole, or the file is gone). */
  withChunk<T>(ino: number, chunkIndex: number, fn: (ref: ChunkRef | null) => Promise<T>): Promise<T>;
}

/**
 * Rewrite chunk c of ino with its pending intents; resolves when committed (or abandoned). joined:
 * told when the rewrite joined the open transaction group and waits for its close (the applier closes
 * it once every rewrite it runs waits there, when a drain or writers wait; else it closes anyway).
 */
export async function rewriteWithIntents(
  env: ChunkEnv,
  host: RewriteHost,
  ino: number,
  c: number,
  joined: () => void = () => void env.groups.close(),
): Promise<void> {
  const snap = await host.withChunk(ino, c, async (ref) => ({ ref, pending: env.backlog.of(ino, c) }));
  const { ref, pending } = snap;
  if (pending.length === 0) return;
  const ids = new Set(pending.map((i) => i.id));
  if (ref === null || pending.some((i) => i.version !== ref.version)) return dropStale(env, host, ino, c, ids);
  for (const i of pending)
    assert(crc32c(i.span) === i.spanCrc, `intent ${i.id} span changed in memory since it was logged`);
  // A pooled buffer, given back once the shards are written: a fresh 4 MiB per rewrite cost the
  // mount's thread its page faults and GC (measured under fsync'd random writes to ec:4+2). From the
  // shard store's large scratch tier, whose idle buffers give their pages back: the codec pool's
  // shared buffers (decode threads need none here) kept 8 chunks, 32 MiB, resident for the mount's
  // life after the first drain (DESIGN §6 "Read buffers").
  const pooled = env.shards.scratch.take(ref.logicalLenBytes);
  const content = pooled.subarray(0, ref.logicalLenBytes);
  let inGroup: Promise<void> | null = null;
  try {
    await readStoredPieces(env, ref, content);
    overlaySpans(pending, ref.version, 0, ref.logicalLenBytes, content, 0);
    // Intent log records only (rows are rebased and dropped by id, in the commit of their own): a
    // live mount's rewrite joins the open transaction group (DESIGN §5).
    if (env.groups.running && pending.every((i) => i.id < 0))
      inGroup = (await writeGrouped(env, host, { ino, c, ref, ids, content }, joined))?.commit ?? null;
    else await writeVersion(env, host, ino, c, ref, ids, content);
  } finally {
    env.shards.scratch.give(pooled); // its shards are written: the wait for the group's close holds no buffer
  }
  await inGroup;
}

/**
 * Stored bytes read in pieces, each straight into content (no reader sees it before the rewrite is
 * written: DESIGN §6 "Read buffers"). Every piece settles before this does, failed or not: content
 * goes back to the pool after, and no read may still be writing into it then.
 */
async function readStoredPieces(env: ChunkEnv, ref: ChunkRef, content: Buffer): Promise<void> {
  // A transformed chunk is decoded whole (store/chunks/chunk-transform.ts).
  if (ref.stored !== null) return readStoredInto(env, ref, 0, content.length, content, 0, false);
  const starts: number[] = [];
  for (let at = 0; at < content.length; at += REWRITE_PIECE_BYTES) starts.push(at);
  await boundedAll(starts, REWRITE_PIECES_IN_FLIGHT_MAX, async (at) => {
    await readStoredInto(env, ref, at, Math.min(REWRITE_PIECE_BYTES, content.length - at), content, at, false, true);
  });
}

/** The new version of content (the stored bytes with the snapshot's intents over them), reserved durably, written, committed. */
async function writeVersion(
  env: ChunkEnv,
  host: RewriteHost,
  ino: number,
  c: number,
  ref: ChunkRef,
  ids: ReadonlySet<number>,
  content: Buffer,
): Promise<void> {
  assert(ref.ino === ino && ref.chunkIndex === c, `rewrite of ino ${ino} chunk ${c} given another chunk's ref`);
  const { version, failed, stored } = await reserveAndWrite(env, host, ref, content);
  try {
    await host.withChunk(ino, c, async (now) => {
      if (now === null || now.version !== ref.version) return; // replaced or dropped meanwhile: ours stays queued for reclaim
      const relogged = await relogOnto(env, ref, version, ids);
      env.db.transaction(() => {
        env.map.setLive(ino, c, version, content.length, stored); // data first: its shards are durable
        env.reclaim.remove(ino, c, version);
        env.reclaim.add(ino, c, ref.version, ref.fl);
        for (const id of ids) env.map.removeIntent(id);
        // The ones logged meanwhile go over the new version (sealed again for it, DESIGN §10 log records).
        env.map.rebaseIntents(ino, c, version, ref.fl.layout.transforms.encryption !== null);
        for (const i of failed) env.map.queueHeal(ino, c, version, i, 'write failed on this shard');
      })();
      env.backlog.remove(ino, c, ids, true);
      env.backlog.rebase(ino, c, version, relogged);
    });
  } finally {
    env.inflight.delete(ino, c, version);
  }
}

/**
 * The new version reserved durably, its shards written (with no flush when syncs say so; not yet
 * live, not on anyone's list). In flight from here: the caller ends that once it is committed or not.
 */
async function reserveAndWrite(
  env: ChunkEnv,
  host: RewriteHost,
  ref: ChunkRef,
  content: Buffer,
  syncs?: WriteSyncs,
): Promise<{ version: bigint; failed: number[]; stored: StoredForm | null; newRef: ChunkRef }> {
  const { ino, chunkIndex: c } = ref;
  const version = env.db.transaction(() => {
    const v = env.map.allocVersion(ino, c);
    env.reclaim.add(ino, c, v, ref.fl);
    return v;
  })();
  env.inflight.add(ino, c, version);
  try {
    await env.commits.flush(); // the reservation is durable before its shards exist
    const newRef = host.ref(ino, ref.fl, c, version, content.length);
    const { failed, stored } = await writeWholeChunk(env, newRef, content, syncs);
    return { version, failed, stored, newRef };
  } catch (err) {
    env.inflight.delete(ino, c, version);
    throw err;
  }
}

interface Snapshot {
  ino: number;
  c: number;
  ref: ChunkRef;
  /** The intents content holds. */
  ids: ReadonlySet<number>;
  content: Buffer;
}

/**
 * The new version in the open transaction group (DESIGN §5): its shards written with no flush of
 * their own, its row visible at once (the group's overlay), then the group's flush and ONE commit
 * make it live; resolves then. Records logged while it was written are logged again over it (durable
 * before that commit) and the backlog holds them over it, so reads of it show them; the records it
 * holds and the ones logged again leave the log only after that commit (free last: a crash before it
 * replays them over the old version). Any partial write of the file waits for that close first, so
 * no intent joins the chunk meanwhile. Left out by the group: the backlog gets the old intents back
 * (the copies' records go: they name a version never live), and the chunk is tried again.
 * Returns that wait, wrapped (an async function's result is never a promise; null: abandoned, the chunk
 * changed meanwhile).
 */
async function writeGrouped(
  env: ChunkEnv,
  host: RewriteHost,
  snap: Snapshot,
  joined: () => void,
): Promise<{ commit: Promise<void> } | null> {
  const { ino, c, ref, ids, content } = snap;
  const syncs = new WriteSyncs();
  const { version, failed, stored, newRef } = await reserveAndWrite(env, host, ref, content, syncs);
  let done: Promise<void> | null = null;
  try {
    await host.withChunk(ino, c, async (now) => {
      if (now === null || now.version !== ref.version) return; // replaced or dropped meanwhile: ours stays queued
      const before = env.backlog.of(ino, c);
      if (before.some((i) => i.id > 0)) return; // a row came: the next try rewrites without the group
      const relogged = await relogOnto(env, ref, version, ids);
      const held = [...ids, ...relogged.keys()].map((id) => BigInt(-id));
      env.backlog.remove(ino, c, ids, true, true);
      env.backlog.rebase(ino, c, version, relogged, true);
      done = new Promise<void>((resolve, reject) => {
        const w = { chunkIndex: c, version, logicalLenBytes: content.length, failed, stored, old: ref };
        env.groups.add(ino, newRef, w, syncs, 0, content.length * newRef.diskIds.length, {
          committed: () => {
            env.backlog.onLogRecordsGone(held); // superseded by this commit (the tail moves after it)
            resolve();
          },
          dropped: (err) => {
            const copies = env.backlog.of(ino, c);
            env.backlog.remove(ino, c, new Set(copies.map((i) => i.id)), false);
            for (const i of before) env.backlog.add(i, ref.fl.bitrotBlockBytes);
            reject(err);
          },
        });
      });
    });
  } finally {
    if (done === null) env.inflight.delete(ino, c, version); // not handed to the group (which releases it)
  }
  if (done === null) return null;
  // A stopped group (the store closes) has no timer: closed at once. Its errors reach the rewrite (dropped).
  if (!env.groups.running) void env.groups.close();
  joined();
  return { commit: done };
}

/**
 * Intent log records that came during the rewrite name the old version (its number is in their
 * record and, sealed, in their AAD), and replay drops a record whose version is not live. So they
 * are logged again over the new version, durable before the commit that makes it live (inode locked:
 * no write joins meanwhile); a crash before that commit replays the old ones over the old version,
 * one after it the new ones. Returns old backlog id -> new one; the old records are released by the
 * rebase. Their times need no record: the commit that stamped them precedes this one in the WAL.
 */
async function relogOnto(
  env: ChunkEnv,
  ref: ChunkRef,
  version: bigint,
  ids: ReadonlySet<number>,
): Promise<Map<number, number>> {
  const meanwhile = env.backlog.of(ref.ino, ref.chunkIndex).filter((i) => !ids.has(i.id) && i.id < 0);
  const relogged = new Map<number, number>();
  if (meanwhile.length === 0) return relogged;
  assert(env.intentLog !== null, 'intent log records come from the intent log');
  const sealed = ref.fl.layout.transforms.encryption !== null;
  const log = env.intentLog;
  const settled = await Promise.allSettled(
    meanwhile.map((i) =>
      log.append({
        ino: ref.ino,
        chunkIndex: ref.chunkIndex,
        version,
        offsetBytes: i.offsetBytes,
        bytes: i.span,
        times: null,
        sealed,
      }),
    ),
  );
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed !== undefined) {
    // Records over a version that never goes live hold nothing: their space may go at once.
    log.release(settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : [])));
    throw failed.reason;
  }
  settled.forEach((r, n) => relogged.set(meanwhile[n].id, logRecordId((r as PromiseFulfilledResult<bigint>).value)));
  return relogged;
}

/** The file is gone or the chunk was replaced by a version that holds these bytes: nothing to apply. */
function dropStale(env: ChunkEnv, host: RewriteHost, ino: number, c: number, ids: ReadonlySet<number>): Promise<void> {
  return host.withChunk(ino, c, async () => {
    removeRows(env, ids);
    env.backlog.remove(ino, c, ids, false);
  });
}
/** The intents rows among ids go, in a harmless commit (replaying an applied intent is idempotent); log records are released by the backlog. */
export function removeRows(env: ChunkEnv, ids: ReadonlySet<number>): void {
  const rows = [...ids].filter((id) => id > 0);
  if (rows.length > 0)
    env.commits.harmless(() => {
      for (const id of rows) env.map.removeIntent(id);
    });
}
