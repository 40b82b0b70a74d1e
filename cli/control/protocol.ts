// The control socket of a live mount (DESIGN §7): a unix socket in the store directory,
// mode 0600 inside the 0700 store (only the store's owner reaches it). One request per connection,
// one JSON object per line: the client sends {v, verb, args}; the mount answers with any number of
// progress lines, then one result or error line, and closes. From version 2 the mount first answers
// 'accepted' with its pid as soon as it reads the request, so a client tells a mount that is working
// from one that is stopped or hung within ACCEPT_WAIT_MS (DESIGN §7). See docs/operations.md, "The control socket".
import * as fs from 'node:fs';
import * as path from 'node:path';

export const PROTOCOL_VERSION = 2;
/** Version 1 clients (no 'accepted' line) are still served as before. */
export const PROTOCOL_VERSIONS_SERVED: readonly number[] = [1, 2];
export const SOCKET_FILE = 'chunkfs.sock';
/** sockaddr_un.sun_path holds 108 bytes with the terminating NUL. */
export const SOCKET_PATH_BYTES_MAX = 107;
/** A request is a verb and its arguments: small. */
export const REQUEST_BYTES_MAX = 64 * 1024;
/** Replies carry reports (bounded lists); a longer line is a bug, refused by the client. */
export const REPLY_LINE_BYTES_MAX = 16 * 1024 * 1024;
/** Connections served at once; more are answered with an error. */
export const CONNECTIONS_MAX = 16;
/** Progress lines are sent at most this often (and always the last one). */
export const PROGRESS_INTERVAL_MS = 250;

export interface Request {
  v: number;
  verb: string;
  args: unknown;
}

export type Reply =
  | { type: 'accepted'; pid: number }
  | { type: 'progress'; progress: Progress }
  | { type: 'result'; result: unknown }
  | { type: 'error'; message: string };

/** Work done so far by a long verb (scrub, heal, fsck, replace-disk). */
export interface Progress {
  phase: string;
  doneBytes: number;
  totalBytes: number;
  doneItems: number;
  totalItems: number;
}

export function socketPath(storeDir: string): string {
  return path.join(storeDir, SOCKET_FILE);
}

/**
 * Runs fn with an address bind() and connect() accept for the socket file: the path itself when it
 * fits sun_path, else the same file reached through /proc/self/fd/<fd>/ of its directory, held
 * open for the call (Linux follows that link to the directory), so a store deep in the tree still
 * gets its socket. The directory's own modes still guard it.
 */
export async function withSocketAddress<T>(file: string, fn: (address: string) => Promise<T>): Promise<T> {
  if (Buffer.byteLength(file) <= SOCKET_PATH_BYTES_MAX) return fn(file);
  const fd = fs.openSync(path.dirname(file), fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  try {
    const address = `/proc/self/fd/${fd}/${path.basename(file)}`;
    if (Buffer.byteLength(address) > SOCKET_PATH_BYTES_MAX)
      throw new Error(`socket name ${path.basename(file)} too long`);
    return await fn(address);
  } finally {
    fs.closeSync(fd);
  }
}

/** JSON with bigints as decimal strings (store reports carry some). */
export function encodeLine(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) + '\n';
}
