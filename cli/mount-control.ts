// The live mount's control socket: every action of cli/actions/ served on the mount's own
// store, with what only the mount has (its fault table, its write-back buffer).
import { ControlServer, Handler } from './control/server';
import { ACTIONS } from './actions/index';
import { LiveMount } from './actions/env';
import type { Store } from '../store/store';

export function startControl(store: Store, live: LiveMount, log: (line: string) => void): Promise<ControlServer> {
  const handlers = new Map<string, Handler>();
  for (const [verb, action] of ACTIONS) {
    handlers.set(verb, (args, ctx) => action.run({ store, live, progress: ctx.progress, signal: ctx.signal }, args));
  }
  return ControlServer.start(store.dir, handlers, log);
}
