// Runs a verb's action where the store is: through the live mount's control socket when
// one serves the store, else on the store opened here (read-only, or read-write with its lock).
import type { Progress } from './control/protocol';
import { connectMount, request } from './control/client';
import { ActionError, ActionEnv } from './actions/env';
import { ACTIONS } from './actions/index';
import { Target } from './target';
import { assert } from '../src/errors';

export interface RunResult {
  result: unknown;
  online: boolean;
}

export async function runAction(
  target: Target,
  verb: string,
  args: unknown,
  progress: (p: Progress) => void,
): Promise<RunResult> {
  const action = ACTIONS.get(verb);
  assert(action !== undefined, `no action for verb ${verb}`);
  const link = await connectMount(target.storeDir);
  if (link !== null) return { result: await request(link, verb, args, progress), online: true };
  const why = action.needsLiveMount?.(args) ?? null;
  if (why !== null) throw new ActionError(`${target.storeDir} is not mounted: ${why}`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Store } = require('../store/store') as typeof import('../store/store');
  const readOnly = action.storeAccess(args) === 'read';
  // A store key kept outside the store (mkfs --keyfile) reaches the offline tools by environment.
  const store = await Store.open(target.storeDir, { readOnly, keyFile: process.env.CHUNKFS_KEYFILE });
  // Ctrl-C stops a long pass at its next step; the store then closes cleanly.
  const abort = new AbortController();
  const onSigint = (): void => abort.abort();
  process.once('SIGINT', onSigint);
  try {
    const env: ActionEnv = { store, live: null, progress, signal: abort.signal };
    return { result: await action.run(env, args), online: false };
  } finally {
    process.off('SIGINT', onSigint);
    await store.close();
  }
}
