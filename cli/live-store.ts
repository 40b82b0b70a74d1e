// The store of a live mount: opened on the injectable Io (store/io/inject-io.ts) so `chunkfs inject`
// reaches every disk call, with the healer and the background commit/reclaim running. A read-only
// mount (-o ro) of a store whose metadata is on PostgreSQL follows the store's writer instead, here
// or on another machine (DESIGN §9, store/follower.ts): no lock, no lease, nothing written.
import { FaultTable } from '../store/io/fault-table';
import { InjectIo, InjectSyncIo } from '../store/io/inject-io';
import { NodeIo } from '../store/io/io';
import { FlushObserver, MeteredIo } from '../store/io/metered-io';
import { Store } from '../store/store';
import { nodeSyncIo } from '../store/io/sync-io';
import { openConfig } from '../store/config';
import { StoreLockedError } from '../store/store-lock';
import { ChunkfsError } from '../src/errors';
import { mountNote, openAfterHandover } from './store-handover';

export interface LiveStoreOptions {
  /** -o metrics: told each device flush's duration (store/io/metered-io.ts), else flushes are not timed. */
  onFlush?: FlushObserver;
  keyFile?: string;
  /** -o ro. */
  readOnly?: boolean;
  /** -o lease_ms (DESIGN §9 "Lease and fencing"); default store/meta/postgres/lease.ts LEASE_MS. */
  leaseMs?: number;
}

/** A store still held by a mount just unmounted is waited for (cli/store-handover.ts). */
export async function openLiveStore(
  storeDir: string,
  mountpoint: string,
  o: LiveStoreOptions = {},
): Promise<{ store: Store; faults: FaultTable }> {
  const faults = new FaultTable();
  const node = new NodeIo();
  const log = (line: string): void => {
    process.stderr.write(`chunkfs: ${line}\n`);
  };
  const io = new InjectIo(o.onFlush === undefined ? node : new MeteredIo(node, o.onFlush), faults);
  const syncIo = new InjectSyncIo(nodeSyncIo, faults);
  if (o.readOnly === true && openConfig(storeDir, nodeSyncIo, o.keyFile).config.meta !== undefined) {
    const store = await Store.open(storeDir, { readOnly: true, follow: true, log, keyFile: o.keyFile, io, syncIo });
    return { store, faults };
  }
  try {
    const store = await openAfterHandover(
      storeDir,
      () =>
        Store.open(storeDir, {
          healer: true,
          background: true,
          log,
          lockNote: mountNote(mountpoint),
          keyFile: o.keyFile,
          io,
          syncIo,
          leaseMs: o.leaseMs,
        }),
      log,
    );
    faults.onAdd = () => store.readsChanged(); // a read grant reads outside the Io: none may outlive a new fault
    return { store, faults };
  } catch (err) {
    if (o.readOnly !== true || !(err instanceof StoreLockedError)) throw err;
    throw new ChunkfsError(
      `${err.message}. A read-only mount (-o ro) cannot follow that writer: this store's metadata is in SQLite ` +
        '(meta.db), which one process writes and replays; only a store whose metadata is on PostgreSQL can be followed (chunkfs meta copy moves it there)',
      { path: storeDir },
    );
  }
}
