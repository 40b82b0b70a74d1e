// `chunkfs meta copy <store> --to URI|sqlite` (DESIGN §9): parsing and help. Pure:
// strings in, a typed command out; every problem is a UsageError naming it.
import { UsageError } from './usage-error';
import { flagValue, splitArgs, wholeNumber } from './verb-args';
// Constants only (no driver is loaded): the batch bounds the copy itself enforces.
import { COPY_BATCH_ROWS, COPY_BATCH_ROWS_MAX } from '../store/meta/table-copy';

export interface MetaCommand {
  verb: 'meta';
  action: 'copy';
  store: string;
  /** 'sqlite' or a PostgreSQL URI (checked by store/meta/engine-open.ts parseMetaArg). */
  to: string;
  batchRows?: number;
  keyFile?: string;
  json: boolean;
}

export function parseMetaVerb(args: string[]): MetaCommand {
  const [action, ...rest] = args;
  if (action !== 'copy')
    throw new UsageError(
      'meta',
      action === undefined ? 'missing action (copy)' : `unknown action '${action}' (expected copy)`,
    );
  const s = splitArgs('meta', rest, {
    '--to': 'value',
    '--batch-rows': 'value',
    '--keyfile': 'value',
    '--json': 'bool',
  });
  if (s.positionals.length !== 1)
    throw new UsageError(
      'meta',
      s.positionals.length === 0 ? 'missing <store> directory' : `unexpected argument '${s.positionals[1]}'`,
    );
  const to = flagValue(s, '--to');
  if (to === undefined) throw new UsageError('meta', 'missing --to (sqlite, or postgres://user@host/database)');
  const batch = flagValue(s, '--batch-rows');
  return {
    verb: 'meta',
    action: 'copy',
    store: s.positionals[0],
    to,
    json: s.flags.has('--json'),
    ...(batch === undefined ? {} : { batchRows: wholeNumber('meta', '--batch-rows', batch, 1, COPY_BATCH_ROWS_MAX) }),
    ...(flagValue(s, '--keyfile') === undefined ? {} : { keyFile: flagValue(s, '--keyfile') }),
  };
}

export const META_SYNOPSIS =
  '  meta copy <store> --to postgres://user@host/db|sqlite [--batch-rows N] [--keyfile PATH] [--json]';

export const META_HELP = `usage: chunkfs meta copy <store> --to postgres://user@host/db|sqlite [--batch-rows N] [--keyfile PATH] [--json]

Move a store's metadata to another engine, offline: from SQLite (<store>/meta.db) to an empty
PostgreSQL database, or back with --to sqlite. Every table is copied and then compared row for row,
all in one transaction on the target; only then does <store>/chunkfs.json name the new engine. A
store that is mounted or open is refused (unmount it first), as is a target that holds a store
already. The old metadata is left untouched where it was; drop it once the store serves well.
  --to T             sqlite, or a libpq URI without a password (PGPASSWORD or ~/.pgpass carry it)
  --batch-rows N     rows read, written and compared per batch (default ${COPY_BATCH_ROWS}, at most ${COPY_BATCH_ROWS_MAX})
  --keyfile PATH     the store key, when mkfs kept it outside the store (or CHUNKFS_KEYFILE=PATH)
  --json             the report as JSON`;
