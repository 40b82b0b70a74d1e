// What the writer tells read-only followers (DESIGN §9): after each transaction
// that changed the namespace, a file's rows, its chunk map or the intent log, the followers LISTENing
// on CHANGES_CHANNEL get the inode numbers it touched (PostgreSQL delivers a NOTIFY at commit, and
// only if the transaction commits, in commit order). Statement triggers send them, so every writer
// path is covered without the store naming a channel, and a statement costs no extra round trip.
// A payload names at most CHANGED_INOS_MAX inodes; a statement that touched more says "everything"
// (ALL_CHANGED). Made by a read-write open (open.ts), idempotent: no part of the
// shared schema, so `meta copy` and SQLite know nothing of it.

/** The LISTEN/NOTIFY channel. */
export const CHANGES_CHANNEL = 'chunkfs_changes';
/** A payload lists at most this many inode numbers (about 21 bytes each; NOTIFY allows 8000). */
export const CHANGED_INOS_MAX = 256;
/** The payload meaning "more changed than a payload lists: drop everything". */
export const ALL_CHANGED = '*';

/** Tables whose rows a follower's view depends on, keyed by inode number. */
const INO_TABLES = ['inodes', 'xattrs', 'chunks', 'intents', 'prealloc'] as const;

/**
 * The body of a statement trigger: the distinct inode numbers in `changed` (the transition table)
 * from the given expression, or ALL_CHANGED past the bound.
 */
function noteFunction(name: string, inoExpr: string): string {
  return `CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE n BIGINT; inos TEXT;
  BEGIN
    SELECT count(*), string_agg(x::text, ',') INTO n, inos
      FROM (SELECT DISTINCT x FROM (${inoExpr}) u LIMIT ${CHANGED_INOS_MAX + 1}) d;
    IF n > ${CHANGED_INOS_MAX} THEN inos := '${ALL_CHANGED}'; END IF;
    IF n > 0 THEN PERFORM pg_notify('${CHANGES_CHANNEL}', inos); END IF;
    RETURN NULL;
  END $$;`;
}

/** Insert, update and delete triggers on one table; each event needs its own (transition tables). */
function triggersOn(table: string, fn: string): string {
  return (['INSERT', 'UPDATE', 'DELETE'] as const)
    .map((event) => {
      const rows = event === 'DELETE' ? 'OLD' : 'NEW';
      return `CREATE OR REPLACE TRIGGER chunkfs_note_${event.toLowerCase()} AFTER ${event} ON ${table}
      REFERENCING ${rows} TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION ${fn}();`;
    })
    .join('\n');
}

/**
 * The triggers (one statement list, one round trip). Dirents name the directory (its listing) and the
 * entry's inode (its nlink and ctime); a rename is a delete and an insert of entries. Containers are
 * left out: their bytes change through their own chunk rows, and a moved needle through its inode.
 */
export const CHANGE_NOTIFY_SQL = [
  noteFunction('chunkfs_note_inos', 'SELECT ino AS x FROM changed'),
  noteFunction('chunkfs_note_dirents', 'SELECT parent AS x FROM changed UNION ALL SELECT ino FROM changed'),
  ...INO_TABLES.map((t) => triggersOn(t, 'chunkfs_note_inos')),
  triggersOn('dirents', 'chunkfs_note_dirents'),
].join('\n');

/** The inode numbers of one payload, or 'all'; a payload that is neither is taken as 'all'. */
export function parseChanged(payload: string): number[] | 'all' {
  if (payload === ALL_CHANGED || !/^[0-9]+(,[0-9]+)*$/.test(payload)) return 'all';
  return payload.split(',').map(Number);
}

/** application_name of a follower's listening connection: how the writer counts its followers. */
export const FOLLOWER_APP_NAME = 'chunkfs follower';
/** Followers of this database now, and whether the triggers fire ('O': enabled, by the first of them): one query. */
export const FOLLOWERS_SQL = `SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = '${FOLLOWER_APP_NAME}') AS n,
  (SELECT tgenabled = 'O' FROM pg_trigger WHERE tgname = 'chunkfs_note_insert' AND tgrelid = to_regclass('inodes')) AS on`;

/**
 * The triggers on or off. They cost the writer's statements time on the server (measured: tens of us
 * per single-row commit, the NOTIFY queue written even when nobody listens), so they fire only while
 * a follower listens (announce.ts).
 */
export function announceSql(on: boolean): string {
  const tables = [...INO_TABLES, 'dirents'];
  const triggers = ['insert', 'update', 'delete'].map((e) => `chunkfs_note_${e}`);
  return tables
    .flatMap((t) => triggers.map((g) => `ALTER TABLE ${t} ${on ? 'ENABLE' : 'DISABLE'} TRIGGER ${g};`))
    .join('\n');
}
