// The mount's side of the control socket (cli/control/protocol.ts): accepts one request per
// connection, runs the verb's action on the live store, streams its progress and answers once.
// A client that goes away aborts its action (a Ctrl-C'd `chunkfs scrub` stops the scrub).
import * as fs from 'node:fs';
import * as net from 'node:net';
import {
  CONNECTIONS_MAX,
  PROGRESS_INTERVAL_MS,
  PROTOCOL_VERSION,
  PROTOCOL_VERSIONS_SERVED,
  Progress,
  REQUEST_BYTES_MAX,
  Reply,
  Request,
  encodeLine,
  socketPath,
  withSocketAddress,
} from './protocol';

/** What a verb does on the live store; throws to answer an error. */
export type Handler = (args: unknown, ctx: { progress(p: Progress): void; signal: AbortSignal }) => Promise<unknown>;

const SOCKET_MODE = 0o600;

export class ControlSocketError extends Error {}

export class ControlServer {
  private readonly conns = new Set<net.Socket>();
  /** Actions in progress: close() waits for them (aborted, each stops at its next step) before the store closes. */
  private readonly running = new Set<Promise<void>>();

  private constructor(
    private readonly server: net.Server,
    readonly path: string,
    private readonly handlers: ReadonlyMap<string, Handler>,
    private readonly log: (line: string) => void,
  ) {
    server.on('connection', (c) => this.accept(c));
  }

  /**
   * Listen on <store>/chunkfs.sock. A socket file left by a crashed mount is removed first (the
   * caller holds the store lock, so no other mount serves this store).
   */
  static async start(
    storeDir: string,
    handlers: ReadonlyMap<string, Handler>,
    log: (line: string) => void,
  ): Promise<ControlServer> {
    const file = socketPath(storeDir);
    const st = fs.lstatSync(file, { throwIfNoEntry: false });
    if (st !== undefined) {
      if (!st.isSocket()) throw new ControlSocketError(`${file} exists and is not a socket; refusing to replace it`);
      fs.unlinkSync(file);
    }
    const server = net.createServer();
    // bind() creates the socket file with the umask applied: owner-only from its first moment.
    const umask = process.umask(0o177);
    try {
      await withSocketAddress(
        file,
        (address) =>
          new Promise<void>((resolve, reject) => {
            server.once('error', reject);
            server.listen(address, () => {
              server.off('error', reject);
              resolve();
            });
          }),
      );
    } finally {
      process.umask(umask);
    }
    fs.chmodSync(file, SOCKET_MODE);
    return new ControlServer(server, file, handlers, log);
  }

  private accept(c: net.Socket): void {
    if (this.conns.size >= CONNECTIONS_MAX) {
      c.end(
        encodeLine({
          type: 'error',
          message: `the mount is serving ${CONNECTIONS_MAX} control connections already; try again`,
        } satisfies Reply),
      );
      return;
    }
    this.conns.add(c);
    const abort = new AbortController();
    c.on('close', () => {
      this.conns.delete(c);
      abort.abort();
    });
    c.on('error', () => undefined); // a client gone mid-reply: 'close' follows
    let buf = '';
    let started = false;
    c.setEncoding('utf8');
    c.on('data', (chunk: string) => {
      if (started) return;
      buf += chunk;
      const nl = buf.indexOf('\n');
      if (nl < 0 && buf.length <= REQUEST_BYTES_MAX) return;
      started = true;
      if (nl < 0) return this.reply(c, { type: 'error', message: `request longer than ${REQUEST_BYTES_MAX} bytes` });
      const served = this.serve(c, buf.slice(0, nl), abort.signal);
      this.running.add(served);
      void served.finally(() => this.running.delete(served));
    });
  }

  private reply(c: net.Socket, r: Reply): void {
    if (!c.destroyed) c.end(encodeLine(r));
  }

  private async serve(c: net.Socket, line: string, signal: AbortSignal): Promise<void> {
    let req: Request;
    try {
      req = JSON.parse(line) as Request;
    } catch {
      return this.reply(c, { type: 'error', message: 'request is not JSON' });
    }
    if (req === null || typeof req !== 'object' || !PROTOCOL_VERSIONS_SERVED.includes(req.v)) {
      return this.reply(c, {
        type: 'error',
        message: `unsupported control protocol version ${String(req?.v)} (the mount speaks ${PROTOCOL_VERSION}); restart the mount with this chunkfs`,
      });
    }
    const handler = this.handlers.get(String(req.verb));
    if (handler === undefined)
      return this.reply(c, { type: 'error', message: `the mount does not serve '${String(req.verb)}'` });
    // Before the verb runs (a long one may send its first progress late): the client knows it is heard.
    if (req.v >= 2 && !c.destroyed) c.write(encodeLine({ type: 'accepted', pid: process.pid } satisfies Reply));
    let lastSentMs = 0;
    let pending: Progress | null = null;
    const progress = (p: Progress): void => {
      pending = p;
      const now = Date.now();
      if (now - lastSentMs < PROGRESS_INTERVAL_MS && p.doneItems < p.totalItems) return;
      lastSentMs = now;
      pending = null;
      if (!c.destroyed) c.write(encodeLine({ type: 'progress', progress: p } satisfies Reply));
    };
    try {
      const result = await handler(req.args, { progress, signal });
      if (pending !== null && !c.destroyed)
        c.write(encodeLine({ type: 'progress', progress: pending } satisfies Reply));
      this.reply(c, { type: 'result', result });
    } catch (err) {
      if (!signal.aborted) this.log(`control: ${String(req.verb)}: ${(err as Error).message}`);
      this.reply(c, { type: 'error', message: (err as Error).message });
    }
  }

  /**
   * Stop listening, drop every connection (their actions are aborted), wait for those actions to
   * stop (the store closes next), and remove the socket file.
   */
  async close(): Promise<void> {
    for (const c of this.conns) c.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await Promise.allSettled([...this.running]);
    fs.rmSync(this.path, { force: true });
  }
}
