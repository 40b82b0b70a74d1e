// libpq's two connection string forms (PostgreSQL manual §34.1.1), parsed as libpq parses them, so
// that `--meta` takes what psql takes: a URI, postgresql://[user[:password]@][host][:port][,...]
// [/dbname][?name=value&...], each part percent-encoded, the host empty (the default socket), a
// socket directory (percent-encoded in the host, or in host=), several hosts; or keyword=value pairs
// split by white space, a value single-quoted when it holds spaces (\' and \\ escape inside).
// Only the syntax is checked here: libpq checks the names and values when it connects.

export const URI_PREFIXES = ['postgresql://', 'postgres://'];
/** Characters of a malformed pair shown in its error. */
const KEYWORD_SHOWN_CHARS = 20;

/** The parts of a connection string; keywords as libpq names them (host, port, user, password, dbname, ...). */
export interface Conninfo {
  form: 'uri' | 'keywords';
  /** Keyword -> value; a URI's user, password, host list, port list and dbname under their keywords. */
  values: Map<string, string>;
}

/** A string libpq would refuse to parse; problem says where. */
export class ConninfoSyntaxError extends Error {}

/** libpq's scheme test: the URI prefixes, any case. */
export function isUri(text: string): boolean {
  const lower = text.slice(0, URI_PREFIXES[0].length).toLowerCase();
  return URI_PREFIXES.some((p) => lower.startsWith(p));
}

/** Parses either form (libpq: a URI when it starts with a URI prefix, keyword=value pairs otherwise). */
export function parseConninfo(text: string): Conninfo {
  return isUri(text) ? { form: 'uri', values: parseUri(text) } : { form: 'keywords', values: parseKeywords(text) };
}

function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new ConninfoSyntaxError(`invalid percent-encoding in the ${what} '${part}'`);
  }
}

function parseUri(text: string): Map<string, string> {
  const values = new Map<string, string>();
  const rest = text.slice(text.indexOf('://') + 3);
  const authorityEnd = rest.search(/[/?]/);
  const authority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd);
  const afterAuthority = authorityEnd < 0 ? '' : rest.slice(authorityEnd);
  const at = authority.lastIndexOf('@');
  if (at >= 0) parseUserinfo(authority.slice(0, at), values);
  parseHostList(at >= 0 ? authority.slice(at + 1) : authority, values);
  const q = afterAuthority.indexOf('?');
  const pathPart = q < 0 ? afterAuthority : afterAuthority.slice(0, q);
  if (pathPart.length > 1) values.set('dbname', decode(pathPart.slice(1), 'database name'));
  if (q >= 0) parseQuery(afterAuthority.slice(q + 1), values);
  return values;
}

function parseUserinfo(userinfo: string, values: Map<string, string>): void {
  const colon = userinfo.indexOf(':');
  const user = colon < 0 ? userinfo : userinfo.slice(0, colon);
  if (user !== '') values.set('user', decode(user, 'user name'));
  if (colon >= 0) values.set('password', decode(userinfo.slice(colon + 1), 'password'));
}

/** host[:port][,host[:port]...]; a host may be [IPv6] or a percent-encoded socket directory. */
function parseHostList(list: string, values: Map<string, string>): void {
  if (list === '') return;
  const hosts: string[] = [];
  const ports: string[] = [];
  for (const spec of list.split(',')) {
    const m = /^(\[[^\]]*\]|[^:[\]]*)(?::([^:]*))?$/.exec(spec);
    if (m === null) {
      throw new ConninfoSyntaxError(
        `invalid host '${spec}' (host, host:port, [IPv6]:port, or a percent-encoded socket directory)`,
      );
    }
    hosts.push(decode(m[1].replace(/^\[(.*)\]$/, '$1'), 'host'));
    const port = m[2] ?? '';
    if (port !== '' && !/^[0-9]+$/.test(port))
      throw new ConninfoSyntaxError(`invalid port '${port}' of host '${m[1]}'`);
    ports.push(port);
  }
  if (hosts.some((h) => h !== '')) values.set('host', hosts.join(','));
  if (ports.some((p) => p !== '')) values.set('port', ports.join(','));
}

function parseQuery(query: string, values: Map<string, string>): void {
  if (query === '') return;
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new ConninfoSyntaxError(`invalid query parameter '${pair}' (name=value)`);
    values.set(decode(pair.slice(0, eq), 'parameter name'), decode(pair.slice(eq + 1), 'parameter value'));
  }
}

/** keyword = value pairs; values bare (to the next white space) or single-quoted with \ escapes. */
function parseKeywords(text: string): Map<string, string> {
  const values = new Map<string, string>();
  let i = 0;
  const skipSpace = (): void => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  for (skipSpace(); i < text.length; skipSpace()) {
    const start = i;
    while (i < text.length && text[i] !== '=' && !/\s/.test(text[i])) i++;
    const keyword = text.slice(start, i);
    skipSpace();
    if (keyword === '' || text[i] !== '=') {
      throw new ConninfoSyntaxError(`missing "=" after '${keyword || text.slice(start, start + KEYWORD_SHOWN_CHARS)}'`);
    }
    i++;
    skipSpace();
    let value = '';
    if (text[i] === "'") {
      for (i++; i < text.length && text[i] !== "'"; i++) {
        if (text[i] === '\\' && i + 1 < text.length) i++;
        value += text[i];
      }
      if (i >= text.length) throw new ConninfoSyntaxError(`unterminated quoted value of '${keyword}'`);
      i++;
    } else {
      for (; i < text.length && !/\s/.test(text[i]); i++) {
        if (text[i] === '\\' && i + 1 < text.length) i++;
        value += text[i];
      }
    }
    values.set(keyword, value);
  }
  return values;
}

/** The string with the libpq keyword appended (URI: as a query parameter; keywords: one more pair). */
export function withKeyword(text: string, keyword: string, value: string): string {
  if (!isUri(text)) return `${text} ${keyword}=${value}`;
  const sep = !text.includes('?') ? '?' : text.endsWith('?') || text.endsWith('&') ? '' : '&';
  return `${text}${sep}${keyword}=${encodeURIComponent(value)}`;
}
