// The store of a live mount: opened on the injectable Io (store/io/inject-io.ts) so `chunkfs inject`
// reaches every disk call, with the healer and the background commit/reclaim running.
import { FaultTable } from '../store/io/fault-table';
import { InjectIo, InjectSyncIo } from '../store/io/inject-io';
import { NodeIo } from '../store/io/io';
import { FlushObserver, MeteredIo } from '../store/io/metered-io';
import { Store } from '../store/store';
import { nodeSyncIo } from '../store/io/sync-io';
import { mountNote, openAfterHandover } from './store-handover';

/**
 * onFlush: told each device flush's duration (-o metrics; store/io/metered-io.ts), else flushes are not
 * timed. A store still held by a mount just unmounted is waited for (cli/store-handover.ts).
 */
export async function openLiveStore(storeDir: string, mountpoint: string, onFlush?: FlushObserver, keyFile?: string): Promise<{ store: Store; faults: FaultTable }> {
  const faults = new FaultTable();
  const node = new NodeIo();
  const log = (line: string): void => { process.stderr.write(`chunkfs: ${line}\n`); };
  const store = await openAfterHandover(storeDir, () => Store.open(storeDir, {
    healer: true, background: true, log, lockNote: mountNote(mountpoint), keyFile,
    io: new InjectIo(onFlush === undefined ? node : new MeteredIo(node, onFlush), faults), syncIo: new InjectSyncIo(nodeSyncIo, faults),
  }), log);
  return { store, faults };
}
