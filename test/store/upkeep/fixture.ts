// Shared by the tests of store/upkeep/: a store holding one file of whole chunks, and what the
// upkeep modules take (the chunk environment, a chunk's live ref, the disk roots), so each module
// is called through its own API.
import { ChunkEnv } from '../../../store/chunks/chunk-env';
import { ChunkRef } from '../../../store/chunks/chunk-ref';
import { Io } from '../../../store/io/io';
import { Store } from '../../../store/store';
import { SMALL, prng, randomBytes, smallStore } from '../helpers';

export interface FileFixture {
  store: Store;
  dir: string;
  env: ChunkEnv;
  ino: number;
  /** The file's bytes. */
  data: Buffer;
  /** Chunk c's live ref. */
  ref(c: number): ChunkRef;
  /** Every disk's root directory. */
  roots(): string[];
}

/** The internals of a store the upkeep modules are given by store/store.ts. */
export function internals(store: Store): { env: ChunkEnv; files: { chunkRef(ino: number, c: number): ChunkRef } } {
  return store as unknown as { env: ChunkEnv; files: { chunkRef(ino: number, c: number): ChunkRef } };
}

/** A store with one file of `chunks` whole chunks (no small-file packing); io: its Io. */
export async function fileFixture(layout: string, chunks: number, io?: Io): Promise<FileFixture> {
  const { store, dir } = await smallStore(layout, 6, { smallFileMaxBytes: 0, ...(io ? { io } : {}) });
  const ino = store.ns.create(1, 'f', 0o644, 0, 0).ino;
  const data = randomBytes(prng(chunks + 1), chunks * SMALL.chunkSizeBytes);
  await store.write(ino, 0, data);
  const { env, files } = internals(store);
  return {
    store,
    dir,
    env,
    ino,
    data,
    ref: (c) => files.chunkRef(ino, c),
    roots: () => [...store.diskPaths().values()],
  };
}
