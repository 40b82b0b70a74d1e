// The CLI's side of the control socket (cli/control/protocol.ts): reach the live mount of a store,
// or learn that none is there (then the verb opens the store itself).
import * as net from 'node:net';
import {
  PROTOCOL_VERSION,
  Progress,
  REPLY_LINE_BYTES_MAX,
  Reply,
  encodeLine,
  socketPath,
  withSocketAddress,
} from './protocol';

const CONNECT_TIMEOUT_MS = 5_000;
/**
 * A mount that sends nothing for this long is taken as hung. Long verbs send progress after every
 * chunk (a 4 MiB chunk at a --rate of 1 MiB/s per replica takes seconds, not minutes).
 */
export const REPLY_IDLE_TIMEOUT_MS = 300_000;

/** The mount answered with an error: its message is for the user as is. */
export class MountReplyError extends Error {}

/** A connected control socket, or null when no mount serves the store (no socket, or nobody listening). */
export function connectMount(storeDir: string): Promise<net.Socket | null> {
  const file = socketPath(storeDir);
  return withSocketAddress(
    file,
    (address) =>
      new Promise((resolve, reject) => {
        const s = net.connect(address);
        const timer = setTimeout(() => {
          s.destroy();
          reject(new MountReplyError(`the mount's control socket ${file} does not answer (mount hung?)`));
        }, CONNECT_TIMEOUT_MS);
        s.once('connect', () => {
          clearTimeout(timer);
          resolve(s);
        });
        s.once('error', (err: NodeJS.ErrnoException) => {
          clearTimeout(timer);
          // ENOENT: never mounted, or unmounted; ECONNREFUSED: a socket file left by a killed mount.
          if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') resolve(null);
          else
            reject(
              new MountReplyError(
                `cannot reach the mount's control socket ${file}: ${err.code ?? err.message}${err.code === 'EACCES' ? ' (only the store owner may use it)' : ''}`,
              ),
            );
        });
      }),
  );
}

/** Send one request on a connected socket; progress lines go to onProgress; resolves with the result. */
export function request(
  s: net.Socket,
  verb: string,
  args: unknown,
  onProgress: (p: Progress) => void,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let done = false;
    const finish = (fn: () => void): void => {
      if (done) return;
      done = true;
      s.destroy();
      fn();
    };
    s.setEncoding('utf8');
    s.setTimeout(REPLY_IDLE_TIMEOUT_MS, () =>
      finish(() => reject(new MountReplyError(`the mount sent nothing for ${REPLY_IDLE_TIMEOUT_MS / 1000} s (hung?)`))),
    );
    s.on('data', (chunk: string) => {
      buf += chunk;
      if (buf.length > REPLY_LINE_BYTES_MAX)
        return finish(() => reject(new MountReplyError('the mount sent a reply line too long to be one')));
      for (let nl = buf.indexOf('\n'); nl >= 0 && !done; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let r: Reply;
        try {
          r = JSON.parse(line) as Reply;
        } catch {
          return finish(() => reject(new MountReplyError('the mount sent a reply that is not JSON')));
        }
        if (r.type === 'progress') onProgress(r.progress);
        else if (r.type === 'result') finish(() => resolve(r.result));
        else finish(() => reject(new MountReplyError(r.message)));
      }
    });
    s.on('error', (err) => finish(() => reject(new MountReplyError(`control connection failed: ${err.message}`))));
    s.on('close', () =>
      finish(() =>
        reject(new MountReplyError('the mount closed the control connection without an answer (did it exit?)')),
      ),
    );
    s.write(encodeLine({ v: PROTOCOL_VERSION, verb, args }));
  });
}
