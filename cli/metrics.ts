// -o metrics=HOST:PORT (DESIGN §7: Prometheus text on an opt-in local HTTP port, prom-client):
// the store's counters (bitrot errors, failovers, reconstructions, heals, heal failures, unrecoverable
// reads, ...), bytes read and written through the mount, histograms of FUSE op and device flush
// latency, heal/reclaim queue lengths, per-disk state and injected faults. Store numbers are read at
// scrape time (Store.status), so an idle mount does no metrics work. Reads answered in C from read
// grants never reach the op hooks: their count and bytes are read from the transport at
// scrape time and added to the bytes read, so that total stays every byte read through the mount.
import * as http from 'node:http';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Store } from '../store/store';
import type { FaultTable } from '../store/io/fault-table';
import type { ReadGrantStats } from '../fs/fuse/transport';
import { COUNTER_NAMES, CounterName } from '../store/meta/counters';

const OP_BUCKETS_S = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30];
const FLUSH_BUCKETS_S = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1, 5];
const DISK_STATES = ['ok', 'degraded', 'offline'] as const;

/** What a counter counts, where its name does not say it (docs/operations.md "Metrics"). */
const COUNTER_HELP: Partial<Record<CounterName, string>> = {
  bitrot_errors: 'Shards found bitrotten, each once (when queued for heal)',
  missing_shards: 'Shards found missing, each once (when queued for heal)',
  header_mismatches: 'Shards whose header disagrees with the metadata, each once (when queued for heal)',
  io_errors: 'Shards a disk failed to read, each once (when queued for heal)',
  reads_served_around:
    'Reads served without a shard they would read first (it failed, or its disk is offline or failing)',
};

export class MetricsError extends Error {}

export class Metrics {
  readonly registry = new Registry();
  private store: Store | null = null;
  private faults: FaultTable | null = null;
  private grants: (() => ReadGrantStats | null) | null = null;
  private server: http.Server | null = null;
  private readonly opSeconds: Histogram<'op'>;
  private readonly flushSeconds: Histogram;
  private readonly readBytes: Counter;
  private readonly writtenBytes: Counter;

  constructor() {
    const registers = [this.registry];
    this.opSeconds = new Histogram({
      name: 'chunkfs_fuse_op_duration_seconds',
      help: 'FUSE request to reply, by op',
      labelNames: ['op'],
      buckets: OP_BUCKETS_S,
      registers,
    });
    this.flushSeconds = new Histogram({
      name: 'chunkfs_device_flush_duration_seconds',
      help: 'fsync/fdatasync of shard files, directories and the metadata WAL',
      buckets: FLUSH_BUCKETS_S,
      registers,
    });
    const self = this;
    let grantBytesSeen = 0;
    this.readBytes = new Counter({
      name: 'chunkfs_read_bytes_total',
      help: 'Bytes read through the mount',
      registers,
      collect() {
        const g = self.grants?.() ?? null;
        if (g !== null && g.servedBytes > grantBytesSeen) {
          this.inc(g.servedBytes - grantBytesSeen);
          grantBytesSeen = g.servedBytes;
        }
      },
    });
    this.writtenBytes = new Counter({
      name: 'chunkfs_written_bytes_total',
      help: 'Bytes written through the mount',
      registers,
    });
    this.storeMetrics();
    this.grantMetrics();
  }

  /** The mount's read grants once mounted (an unmounted or fuse-native mount has none: nothing is added). */
  watchGrants(stats: () => ReadGrantStats | null): void {
    this.grants = stats;
  }

  /** Read grants' own counters, read at scrape time (they count in C, not through observeOp). */
  private grantMetrics(): void {
    const registers = [this.registry];
    const self = this;
    const counter = (name: string, help: string, pick: (g: ReadGrantStats) => number): void => {
      let seen = 0;
      new Counter({
        name,
        help,
        registers,
        collect() {
          const g = self.grants?.() ?? null;
          if (g !== null && pick(g) > seen) {
            this.inc(pick(g) - seen);
            seen = pick(g);
          }
        },
      });
    };
    counter(
      'chunkfs_read_grant_reads_total',
      'Reads answered in C from read grants, verified, not in the FUSE op histogram',
      (g) => g.servedReads,
    );
    counter(
      'chunkfs_read_grant_handed_back_total',
      'Reads a grant could not answer (handed to the read pipeline: failover, heal)',
      (g) => g.failedReads,
    );
    new Gauge({
      name: 'chunkfs_read_grant_chunks',
      help: 'Chunks granted now',
      registers,
      collect() {
        this.set(self.grants?.()?.grantedChunks ?? 0);
      },
    });
  }

  /** The store's persistent counters as Prometheus counters, and its queues and disks as gauges. */
  private storeMetrics(): void {
    const registers = [this.registry];
    const self = this;
    const seen = new Map<string, number>();
    for (const name of COUNTER_NAMES) {
      new Counter({
        name: `chunkfs_${name}_total`,
        help: `${COUNTER_HELP[name] ?? `Store counter ${name}`} (persistent across mounts)`,
        registers,
        async collect() {
          const v = (await self.status())?.counters[name] ?? 0;
          const delta = v - (seen.get(name) ?? 0);
          if (delta > 0) {
            this.inc(delta);
            seen.set(name, v);
          }
        },
      });
    }
    const gauge = (name: string, help: string, pick: (s: Awaited<ReturnType<Store['status']>>) => number): void => {
      new Gauge({
        name,
        help,
        registers,
        async collect() {
          const s = await self.status();
          if (s !== null) this.set(pick(s));
        },
      });
    };
    let compactionErrors = 0;
    new Counter({
      name: 'chunkfs_compaction_errors_total',
      help: 'Errors of the background compaction rounds since mount (containers kept for a later round)',
      registers,
      async collect() {
        const v = (await self.status())?.compaction.errors ?? 0;
        if (v > compactionErrors) this.inc(v - compactionErrors);
        compactionErrors = Math.max(compactionErrors, v);
      },
    });
    gauge('chunkfs_heal_queue_length', 'Shards queued for heal', (s) => s.healQueueLength);
    gauge('chunkfs_reclaim_backlog', 'Chunk versions waiting for background deletion', (s) => s.reclaimBacklog);
    gauge('chunkfs_open_intents', 'Journaled write intents not yet resolved', (s) => s.openIntents);
    gauge(
      'chunkfs_intent_backlog_bytes',
      'Span bytes durable in the intent log, not yet applied to the shards',
      (s) => s.intentBacklog.bytes,
    );
    new Gauge({
      name: 'chunkfs_disk_state',
      help: '1 for the state each disk is in (ok, degraded, offline)',
      labelNames: ['disk', 'state'],
      registers,
      async collect() {
        const s = await self.status();
        for (const d of s?.disks ?? [])
          for (const state of DISK_STATES) this.set({ disk: String(d.id), state }, d.state === state ? 1 : 0);
      },
    });
    new Gauge({
      name: 'chunkfs_disk_errors',
      help: 'I/O errors seen on each disk since the mount started',
      labelNames: ['disk'],
      registers,
      async collect() {
        for (const d of (await self.status())?.disks ?? []) this.set({ disk: String(d.id) }, d.errors);
      },
    });
    new Gauge({
      name: 'chunkfs_injected_faults',
      help: 'Faults set by chunkfs inject',
      registers,
      collect() {
        this.set(self.faults?.list().length ?? 0);
      },
    });
  }

  /** One status per scrape, shared by every collector of that scrape. */
  private pending: Promise<Awaited<ReturnType<Store['status']>> | null> | null = null;
  private status(): Promise<Awaited<ReturnType<Store['status']>> | null> {
    if (this.store === null) return Promise.resolve(null);
    if (this.pending === null) {
      this.pending = this.store.status().catch(() => null);
      void this.pending.finally(() =>
        setImmediate(() => {
          this.pending = null;
        }),
      );
    }
    return this.pending;
  }

  observeOp(op: string, seconds: number, result: unknown): void {
    this.opSeconds.observe({ op }, seconds);
    if (typeof result === 'number' && result > 0) {
      if (op === 'read') this.readBytes.inc(result);
      else if (op === 'write') this.writtenBytes.inc(result);
    }
  }

  observeFlush(seconds: number): void {
    this.flushSeconds.observe(seconds);
  }

  /** Serve GET /metrics on host:port (0: any free port) for store; resolves to the port it listens on. */
  async listen(host: string, port: number, store: Store, faults: FaultTable): Promise<number> {
    this.store = store;
    this.faults = faults;
    const server = http.createServer((req, res) => {
      if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('chunkfs serves GET /metrics\n');
        return;
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(text),
        (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${err.message}\n`),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(new MetricsError(`cannot serve metrics on ${host}:${port}: ${err.code ?? err.message}`)),
      );
      server.listen(port, host, () => resolve());
    });
    this.server = server;
    return (server.address() as { port: number }).port;
  }

  close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server === null) return Promise.resolve();
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  }
}
