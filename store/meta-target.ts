// Where a store keeps its metadata (DESIGN §9): SQLite in meta.db in the store directory (the
// default: a config without `meta`), or a PostgreSQL database named by a libpq connection URI,
// recorded in chunkfs.json at mkfs. The URI never holds a password: the config is a plain file
// that backups and bug reports copy, and libpq's usual places carry it (PGPASSWORD,
// ~/.pgpass, PGPASSFILE, a service file).

/** What chunkfs.json records under `meta` for a store on PostgreSQL. */
export interface MetaTarget {
  engine: 'postgres';
  /** libpq connection URI (postgres:// or postgresql://), without a password. */
  url: string;
}

/** A connection string chunkfs will not record (names it and says why). */
export class MetaTargetError extends Error {
  constructor(readonly target: string, problem: string) {
    super(`metadata connection string '${target}': ${problem}`);
    this.name = 'MetaTargetError';
  }
}

const URI_SCHEMES = ['postgres:', 'postgresql:'];
/** A connection string longer than this is a mistake (libpq has no such limit; a config line does). */
const URL_CHARS_MAX = 2048;

/** The connection string with any password hidden, for messages. */
export function redactedUrl(url: string): string {
  return url.replace(/(\/\/[^:/@?]*):[^@/?]*@/, '$1:***@').replace(/([?&]password=)[^&]*/gi, '$1***');
}

/** Checks a `--meta` value: a PostgreSQL URI without a password; the MetaTarget to record. */
export function parseMetaTarget(text: string): MetaTarget {
  if (text.length === 0 || text.length > URL_CHARS_MAX) throw new MetaTargetError(text.slice(0, 80), `expected 1..${URL_CHARS_MAX} characters`);
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new MetaTargetError(text, 'not a URI; expected postgres://user@host/database or postgresql:///database?host=/socket/dir');
  }
  if (!URI_SCHEMES.includes(u.protocol)) {
    throw new MetaTargetError(text, `scheme '${u.protocol}' is not postgres: or postgresql: (SQLite, the default, needs no --meta)`);
  }
  if (u.password !== '' || [...u.searchParams.keys()].some((k) => k.toLowerCase() === 'password')) {
    throw new MetaTargetError(redactedUrl(text), 'holds a password, which chunkfs would record in chunkfs.json; ' +
      'leave it out and give it to libpq in PGPASSWORD or ~/.pgpass instead');
  }
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (database.length === 0 && !u.searchParams.has('dbname')) {
    throw new MetaTargetError(text, 'names no database (postgres://user@host/DATABASE)');
  }
  return { engine: 'postgres', url: text };
}
