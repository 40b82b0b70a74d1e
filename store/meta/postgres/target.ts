// A PostgreSQL metadata target (DESIGN §9; store/meta-target.ts): a libpq connection string as
// `--meta` gives it and chunkfs.json records it, never with a password: libpq's usual places carry
// it (PGPASSWORD, ~/.pgpass, PGPASSFILE, a service file).
import type { MetaTarget } from '../../meta-target';
import { Conninfo, ConninfoSyntaxError, isUri, parseConninfo } from './conninfo';

/** The engine's name in chunkfs.json. */
export const POSTGRES_ENGINE = 'postgres';

/** A connection string chunkfs will not record (names it and says why). */
export class MetaTargetError extends Error {
  constructor(
    readonly target: string,
    problem: string,
  ) {
    super(`metadata connection string '${target}': ${problem}`);
    this.name = 'MetaTargetError';
  }
}

/** A connection string longer than this is a mistake (libpq has no such limit; a config line does). */
const URL_CHARS_MAX = 2048;
/** What a connection string looks like, for a message about one that is not. */
const FORMS_TEXT =
  'expected postgres://user@host/database, postgresql://user@/database?host=/socket/dir ' +
  "or 'host=/socket/dir dbname=database'";

/** The connection string with any password hidden, for messages. */
export function redactedUrl(url: string): string {
  if (!isUri(url)) return url.replace(/(^|\s)(password\s*=\s*)('(\\.|[^'])*'|\S*)/gi, '$1$2***');
  return url.replace(/(\/\/[^:/@?]*):[^@/?]*@/, '$1:***@').replace(/([?&]password=)[^&]*/gi, '$1***');
}

/**
 * Checks a `--meta` value: a connection string libpq parses (a URI or keyword=value pairs), naming a
 * database and holding no password; the MetaTarget to record.
 */
export function parseMetaTarget(text: string): MetaTarget {
  if (text.length === 0 || text.length > URL_CHARS_MAX)
    throw new MetaTargetError(text.slice(0, 80), `expected 1..${URL_CHARS_MAX} characters`);
  // sqlite:..., SQLite: the embedded engine has one place, in the store; a path given to it is a mistake.
  if (/^sqlite/i.test(text))
    throw new MetaTargetError(text, "SQLite takes no location: 'sqlite' alone names it (always <store>/meta.db)");
  const scheme = /^([a-z][a-z0-9+.-]*:)\/\//i.exec(text);
  if (scheme !== null && !isUri(text)) {
    throw new MetaTargetError(
      text,
      `scheme '${scheme[1]}' is not postgres: or postgresql: ` + '(SQLite, the default, needs no --meta)',
    );
  }
  if (!isUri(text) && !text.includes('=')) {
    throw new MetaTargetError(text, `not a PostgreSQL connection string; ${FORMS_TEXT}`);
  }
  let info: Conninfo;
  try {
    info = parseConninfo(text);
  } catch (err) {
    if (!(err instanceof ConninfoSyntaxError)) throw err;
    throw new MetaTargetError(redactedUrl(text), `${err.message}; ${FORMS_TEXT}`);
  }
  if (info.values.has('password')) {
    throw new MetaTargetError(
      redactedUrl(text),
      'holds a password, which chunkfs would record in chunkfs.json; ' +
        'leave it out and give it to libpq in PGPASSWORD or ~/.pgpass instead',
    );
  }
  if ((info.values.get('dbname') ?? '') === '' && !info.values.has('service')) {
    throw new MetaTargetError(
      text,
      `names no database (${info.form === 'uri' ? 'postgres://user@host/DATABASE' : 'dbname=DATABASE'})`,
    );
  }
  return { engine: POSTGRES_ENGINE, url: text };
}
