// After a crash and reopen (DESIGN §5 "data first"): a shard a committed group names is there and
// verifies, or its write or flush failed and that commit queued it for heal (the write quorum
// held); heal then makes every live shard verify, and no shard file is left unaccounted for.
import type { ExecutionContext } from 'ava';
import type { Store } from '../../store/store';

const HEAL_QUEUE_READ_MAX = 1000;

export async function shardsWholeAfterHeal(t: ExecutionContext, r: Store, step: number | string): Promise<void> {
  const key = (e: { ino: number; chunkIndex: number; shardIndex: number }): string =>
    `${e.ino}/${e.chunkIndex}/${e.shardIndex}`;
  const queued = new Set(r.healQueue(HEAL_QUEUE_READ_MAX).map(key));
  const found = await r.scrub();
  const unqueued = found.bad.filter((b) => !queued.has(key(b)));
  t.deepEqual(unqueued, [], `step ${step}: every shard that does not verify was queued for heal`);
  if (found.badCount > 0) await r.heal();
  const scrub = found.badCount > 0 ? await r.scrub() : found;
  t.is(scrub.badCount, 0, `step ${step}: every live shard verifies (none a committed group names is missing)`);
  t.deepEqual(scrub.leaks.paths, [], `step ${step}: no shard left that nothing accounts for`);
}
