// The CLI's side of the control socket (cli/control/protocol.ts): reach the live mount of a store,
// or learn that none is there (then the verb opens the store itself).
import * as net from 'node:net';
import { lockHolder, thisHost } from '../../store/store-lock';
import { processStopped } from '../process-state';
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
 * A live mount answers 'accepted' as soon as its event loop reads the request; one that does not
 * within this is stopped (SIGSTOP, a paused VM) or hung, and the command gives up (DESIGN §7).
 */
export const ACCEPT_WAIT_MS = 10_000;
/**
 * A mount that sends nothing for this long is taken as hung. Long verbs send progress after every
 * chunk (a 4 MiB chunk at a --rate of 1 MiB/s per replica takes seconds, not minutes).
 */
export const REPLY_IDLE_TIMEOUT_MS = 300_000;

/** The mount answered with an error: its message is for the user as is. */
export class MountReplyError extends Error {}

/**
 * The store's mount holds the socket but does not answer: never a reason to open the store beside
 * it (it still holds the store), so a command stops here.
 */
export class MountNotAnsweringError extends MountReplyError {}

/** A connection to the mount of storeDir. */
export interface MountLink {
  socket: net.Socket;
  storeDir: string;
}

/** One line naming the mount process (from the store lock it holds) and what to try. */
function notAnswering(storeDir: string, waitedMs: number): MountNotAnsweringError {
  const holder = lockHolder(storeDir);
  const secs = `${waitedMs / 1000} s`;
  if (holder === null || (holder.host !== null && holder.host !== thisHost().host))
    return new MountNotAnsweringError(
      `store ${storeDir}: its mount has not answered the control socket in ${secs} (stopped? hung?); nothing was done`,
    );
  const pid = holder.pid;
  const why = processStopped(pid) ? `it is stopped: kill -CONT ${pid}` : `stopped? kill -CONT ${pid}; else hung`;
  return new MountNotAnsweringError(
    `store ${storeDir}: its mount process ${pid} is not answering (${secs} on the control socket; ${why}); ` +
      'nothing was done',
  );
}

/** A connected control socket, or null when no mount serves the store (no socket, or nobody listening). */
export function connectMount(storeDir: string): Promise<MountLink | null> {
  const file = socketPath(storeDir);
  return withSocketAddress(
    file,
    (address) =>
      new Promise((resolve, reject) => {
        const s = net.connect(address);
        const timer = setTimeout(() => {
          s.destroy();
          reject(notAnswering(storeDir, CONNECT_TIMEOUT_MS));
        }, CONNECT_TIMEOUT_MS);
        s.once('connect', () => {
          clearTimeout(timer);
          resolve({ socket: s, storeDir });
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

/**
 * Send one request on a connected socket; progress lines go to onProgress; resolves with the result.
 * A mount that does not accept it within ACCEPT_WAIT_MS is not answering (MountNotAnsweringError).
 */
export function request(
  link: MountLink,
  verb: string,
  args: unknown,
  onProgress: (p: Progress) => void,
): Promise<unknown> {
  const s = link.socket;
  return new Promise((resolve, reject) => {
    let buf = '';
    let done = false;
    let accepted = false;
    const finish = (fn: () => void): void => {
      if (done) return;
      done = true;
      s.destroy();
      fn();
    };
    s.setEncoding('utf8');
    s.setTimeout(ACCEPT_WAIT_MS, () =>
      finish(() =>
        reject(
          accepted
            ? new MountReplyError(`the mount sent nothing for ${REPLY_IDLE_TIMEOUT_MS / 1000} s (hung?)`)
            : notAnswering(link.storeDir, ACCEPT_WAIT_MS),
        ),
      ),
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
        if (!accepted) {
          accepted = true;
          s.setTimeout(REPLY_IDLE_TIMEOUT_MS);
        }
        if (r.type === 'accepted') continue;
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
