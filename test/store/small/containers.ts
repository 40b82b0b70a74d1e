// Shared by the tests of store/small/: the packing the stores are made with, and the containers
// table as rows.
import { Store } from '../../../store/store';

/** Files up to 16 KiB are packed as needles. */
export const PACK = { smallFileMaxBytes: 16 * 1024 };

export function containerRows(store: Store): Array<Record<string, unknown>> {
  return (store.ns.db.prepare('SELECT * FROM containers ORDER BY id').all() as Array<Record<string, unknown>>).map(
    (r) => ({ ...r }),
  );
}
