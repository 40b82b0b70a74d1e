// Every verb the control socket serves, by name (cli/control/server.ts) and run offline by
// cli/run-action.ts.
import { Action } from './env';
import { statusAction } from './status';
import { injectAction } from './inject';

export const ACTIONS: ReadonlyMap<string, Action> = new Map<string, Action>([
  ['status', statusAction],
  ['inject', injectAction],
]);
