// The store key of encrypted layouts (DESIGN §10): 32 random bytes, made at mkfs,
// kept in the store directory (data.key, 0600) or outside it (mkfs --keyfile, mount -o keyfile=).
// The config keeps a check value, never the key: a wrong or missing key is refused when the
// store opens, before anything changes, instead of failing every read.
import * as crypto from 'node:crypto';
import * as path from 'node:path';
import { STORE_KEY_BYTES } from '../src/chunk-cipher';
import { ChunkfsError } from '../src/errors';
import { SyncIo } from './io/sync-io';

export const STORE_KEY_FILE = 'data.key';
const CHECK_LABEL = 'chunkfs store key check v1';

/** What the config records: where the key is (absent: only outside the store) and its check value. */
export interface StoreKeyRef {
  file?: string;
  check: string;
}

export class StoreKeyError extends ChunkfsError {
  readonly code = 'EINVAL';
}

/** HMAC-SHA256(key, label), first 16 bytes, hex: tells a wrong key without revealing it. */
export function keyCheck(key: Uint8Array): string {
  return crypto.createHmac('sha256', key).update(CHECK_LABEL).digest().subarray(0, 16).toString('hex');
}

/** Permission bits of a key file others could read or change (group or other). */
const KEY_SHARED_BITS = 0o077;

/**
 * external: a key file outside the store (mkfs --keyfile, -o keyfile=), which no open tightens:
 * one others can read or change is refused, as ssh refuses such a private key (DESIGN §10).
 */
function readKeyFile(io: SyncIo, file: string, external: boolean): Buffer {
  const st = io.stat(file);
  if (st === null) throw new StoreKeyError(`store key file ${file} does not exist`);
  if (st.kind !== 'file') throw new StoreKeyError(`store key file ${file} is not a regular file`);
  if (external && (st.permBits & KEY_SHARED_BITS) !== 0) {
    const mode = st.permBits.toString(8).padStart(4, '0');
    throw new StoreKeyError(
      `store key file ${file} is open to others (mode ${mode}); make it owner-only (chmod 600 ${file}) and retry`,
    );
  }
  const key = io.readFile(file);
  if (key.length !== STORE_KEY_BYTES)
    throw new StoreKeyError(`store key file ${file} must hold ${STORE_KEY_BYTES} bytes, it holds ${key.length}`);
  return key;
}

/**
 * mkfs, before anything is made: an external key file is an existing key, or goes in an existing
 * directory (a missing one is a typo more often than a wish for new directories).
 */
export function checkKeyFileTarget(io: SyncIo, externalFile: string): void {
  const file = path.resolve(externalFile);
  if (io.stat(file) !== null) {
    readKeyFile(io, file, true);
    return;
  }
  const parent = path.dirname(file);
  const st = io.stat(parent);
  if (st === null) {
    throw new StoreKeyError(
      `store key file ${file}: directory ${parent} does not exist; ` +
        'create it first, or give --keyfile a path in an existing directory',
    );
  }
  if (st.kind !== 'dir') throw new StoreKeyError(`store key file ${file}: ${parent} is not a directory`);
}

/**
 * mkfs: a new key in the store directory, or at externalFile (an existing one there is used);
 * made(file): told of an external key file this call created (a failed mkfs removes it).
 */
export function createStoreKey(
  io: SyncIo,
  dir: string,
  externalFile?: string,
  made?: (file: string) => void,
): StoreKeyRef {
  if (externalFile !== undefined) {
    const file = path.resolve(externalFile);
    if (io.stat(file) === null) {
      io.createExclusive(file, crypto.randomBytes(STORE_KEY_BYTES));
      made?.(file);
    }
    return { check: keyCheck(readKeyFile(io, file, true)) };
  }
  const key = crypto.randomBytes(STORE_KEY_BYTES);
  io.writeFileDurable(path.join(dir, STORE_KEY_FILE), key);
  return { file: STORE_KEY_FILE, check: keyCheck(key) };
}

/**
 * The key at open: keyFile (given at mount time) or the one the config names; refused when
 * missing or when it is not the key the store was made with. null: a store without a key
 * (made before transforms), which holds no encrypted chunk.
 */
export function loadStoreKey(io: SyncIo, dir: string, ref: StoreKeyRef | undefined, keyFile?: string): Buffer | null {
  if (ref === undefined) {
    if (keyFile !== undefined)
      throw new StoreKeyError(`store ${dir} was made without a store key; keyfile=${keyFile} cannot apply`);
    return null;
  }
  if (keyFile === undefined && ref.file === undefined) {
    throw new StoreKeyError(
      `store ${dir} keeps its key outside the store: give it with -o keyfile=PATH (or CHUNKFS_KEYFILE=PATH)`,
    );
  }
  const file = keyFile !== undefined ? path.resolve(keyFile) : path.resolve(dir, ref.file!);
  const key = readKeyFile(io, file, keyFile !== undefined);
  if (keyCheck(key) !== ref.check)
    throw new StoreKeyError(`${file} is not the key of store ${dir} (its check value differs); nothing was changed`);
  return key;
}

/** A config's storeKey entry, shape-checked. */
export function checkKeyRef(v: unknown): string | null {
  if (v === undefined) return null;
  const r = v as StoreKeyRef;
  if (typeof r !== 'object' || r === null || typeof r.check !== 'string' || !/^[0-9a-f]{32}$/.test(r.check))
    return 'storeKey.check must be 32 hex digits';
  if (r.file !== undefined && (typeof r.file !== 'string' || r.file === ''))
    return 'storeKey.file must be a non-empty path';
  return null;
}
