// Every verb the control socket serves, by name (cli/control/server.ts) and run offline by
// cli/run-action.ts.
import { Action } from './env';
import { statusAction } from './status';
import { injectAction } from './inject';
import { scrubAction } from './scrub';
import { healAction } from './heal';
import { fsckAction } from './fsck';
import { replaceDiskAction } from './replace-disk';
import { compactAction } from './compact';
import { inodeAction } from './inode';

export const ACTIONS: ReadonlyMap<string, Action> = new Map<string, Action>([
  ['status', statusAction],
  ['inject', injectAction],
  ['scrub', scrubAction],
  ['heal', healAction],
  ['fsck', fsckAction],
  ['replace-disk', replaceDiskAction],
  ['compact', compactAction],
  ['inode', inodeAction],
]);
