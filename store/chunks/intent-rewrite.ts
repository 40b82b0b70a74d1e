// An EC or transformed chunk's pending intents (or a replica chunk's whose in-place patch failed) applied as one
// new version of the chunk (DESIGN §5; copy-on-write, spec §8.1: EC never updates a stripe in
// place). The inode's lock is held only to take a snapshot and to commit, not while 4 MiB are read,
// encoded and written: writers and readers of the file go on meanwhile (measured: holding it made
// every fsync'd write to an ec:4+2 file wait for a whole-chunk rewrite, 16 writes/s). At the commit,
// intents logged during the rewrite stay pending, moved onto the new version (rebased): their
// spans go over it exactly as they went over the old one. If the chunk was replaced or dropped
// meanwhile, the new version is abandoned (it stays queued for reclaim, as reserved).
import { assert } from '../../src/errors';
import { crc32c } from '../../src/crc32c';
import { ChunkEnv } from './chunk-env';
import { readStoredInto, writeWholeChunk } from './chunk-io';
import { ChunkRef } from './chunk-ref';
import { ChunkRefs } from './chunk-writer';
import { overlaySpans } from './intent-backlog';

export interface RewriteHost extends ChunkRefs {
  /** fn under the inode's lock with chunk c's live ref (null: a hole, or the file is gone). */
  withChunk<T>(ino: number, chunkIndex: number, fn: (ref: ChunkRef | null) => Promise<T>): Promise<T>;
}

/** Rewrite chunk c of ino with its pending intents; resolves when committed (or abandoned). */
export async function rewriteWithIntents(env: ChunkEnv, host: RewriteHost, ino: number, c: number): Promise<void> {
  const snap = await host.withChunk(ino, c, async (ref) => ({ ref, pending: env.backlog.of(ino, c) }));
  const { ref, pending } = snap;
  if (pending.length === 0) return;
  const ids = new Set(pending.map((i) => i.id));
  if (ref === null || pending.some((i) => i.version !== ref.version)) return dropStale(env, host, ino, c, ids);
  for (const i of pending) assert(crc32c(i.span) === i.spanCrc, `intent ${i.id} span changed in memory since it was logged`);
  const content = Buffer.alloc(ref.logicalLenBytes);
  await readStoredInto(env, ref, 0, ref.logicalLenBytes, content, 0, false);
  overlaySpans(pending, ref.version, 0, ref.logicalLenBytes, content, 0);
  const version = env.db.transaction(() => {
    const v = env.map.allocVersion(ino, c);
    env.reclaim.add(ino, c, v, ref.fl);
    return v;
  })();
  env.inflight.add(ino, c, version);
  try {
    await env.commits.flush(); // the reservation is durable before its shards exist
    const { failed, stored } = await writeWholeChunk(env, host.ref(ino, ref.fl, c, version, content.length), content);
    await host.withChunk(ino, c, async (now) => {
      if (now === null || now.version !== ref.version) return; // replaced or dropped meanwhile: ours stays queued for reclaim
      env.db.transaction(() => {
        env.map.setLive(ino, c, version, content.length, stored); // data first: its shards are durable
        env.reclaim.remove(ino, c, version);
        env.reclaim.add(ino, c, ref.version, ref.fl);
        for (const id of ids) env.map.removeIntent(id);
        env.map.rebaseIntents(ino, c, version); // the ones logged meanwhile go over the new version
        for (const i of failed) env.map.queueHeal(ino, c, version, i, 'write failed on this shard');
      })();
      env.backlog.remove(ino, c, ids, true);
      env.backlog.rebase(ino, c, version);
    });
  } finally {
    env.inflight.delete(ino, c, version);
  }
}

/** The file is gone or the chunk was replaced by a version that holds these bytes: nothing to apply. */
function dropStale(env: ChunkEnv, host: RewriteHost, ino: number, c: number, ids: ReadonlySet<number>): Promise<void> {
  return host.withChunk(ino, c, async () => {
    env.commits.harmless(() => { for (const id of ids) env.map.removeIntent(id); });
    env.backlog.remove(ino, c, ids, false);
  });
}
