// "Another machine that sees the same disk directories" (DESIGN §9): a store directory of its own
// (config and keys; no lock, control socket or meta.db shared) naming the same disks, by absolute
// path, and the same PostgreSQL database. Its mounts reach the store as another machine's would: no
// bind of a live mount here (cli/store-bind.ts finds none through its control socket), its own lock.
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { shOk } from './mount';

/** Makes other (a new directory) such a store directory of store, which must keep its metadata on PostgreSQL. */
export async function otherMachineStoreDir(store: string, other: string): Promise<void> {
  await shOk(`mkdir -m 700 ${other} && cp -p ${store}/chunkfs.json ${store}/*.key ${other}/`);
  const file = path.join(other, 'chunkfs.json');
  const config = JSON.parse(readFileSync(file, 'utf8'));
  if (config.meta === undefined)
    throw new Error(`${store}: its metadata is in meta.db, which another machine cannot share`);
  for (const d of config.disks) d.path = path.resolve(store, d.path);
  writeFileSync(file, JSON.stringify(config, null, 2), { mode: 0o600 });
}
