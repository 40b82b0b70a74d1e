// The store of a live mount: opened on the injectable Io (store/inject-io.ts) so `chunkfs inject`
// reaches every disk call, with the healer and the background commit/reclaim running.
import { FaultTable } from '../store/fault-table';
import { InjectIo, InjectSyncIo } from '../store/inject-io';
import { NodeIo } from '../store/io';
import { Store } from '../store/store';
import { nodeSyncIo } from '../store/sync-io';

export async function openLiveStore(storeDir: string): Promise<{ store: Store; faults: FaultTable }> {
  const faults = new FaultTable();
  const store = await Store.open(storeDir, {
    healer: true, background: true,
    io: new InjectIo(new NodeIo(), faults), syncIo: new InjectSyncIo(nodeSyncIo, faults),
  });
  return { store, faults };
}
