// The store of a live mount: opened on the injectable Io (store/inject-io.ts) so `chunkfs inject`
// reaches every disk call, with the healer and the background commit/reclaim running.
import { FaultTable } from '../store/fault-table';
import { InjectIo, InjectSyncIo } from '../store/inject-io';
import { NodeIo } from '../store/io';
import { FlushObserver, MeteredIo } from '../store/metered-io';
import { Store } from '../store/store';
import { nodeSyncIo } from '../store/sync-io';

/** onFlush: told each device flush's duration (-o metrics; store/metered-io.ts), else flushes are not timed. */
export async function openLiveStore(storeDir: string, onFlush?: FlushObserver): Promise<{ store: Store; faults: FaultTable }> {
  const faults = new FaultTable();
  const node = new NodeIo();
  const store = await Store.open(storeDir, {
    healer: true, background: true, log: (line) => process.stderr.write(`chunkfs: ${line}\n`),
    io: new InjectIo(onFlush === undefined ? node : new MeteredIo(node, onFlush), faults), syncIo: new InjectSyncIo(nodeSyncIo, faults),
  });
  return { store, faults };
}
