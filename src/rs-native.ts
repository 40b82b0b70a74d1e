// Loader for the native addon (native/rs/ GF(2^8) kernels and native/highway/
// HighwayHash-256), built by node-gyp from the root binding.gyp during `npm ci`.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { UnsupportedError } from './errors';

export interface RsNative {
  /** outputs[r] = XOR over c of coef[r*cols+c] * inputs[c], first lengthBytes bytes. */
  mulMatrix(
    coef: Uint8Array,
    rows: number,
    cols: number,
    inputs: readonly Uint8Array[],
    outputs: readonly Uint8Array[],
    lengthBytes: number,
  ): void;
  simdLevel(): string;
  detectedSimdLevel(): string;
  setSimdLevel(level: string): string;
  /** A Buffer in 2 MiB-aligned, MADV_HUGEPAGE memory (native/memory/huge_alloc.cc). */
  allocHuge(lengthBytes: number): Buffer;
  /** MADV_DONTNEED over an allocHuge buffer: its pages go back to the kernel, its bytes read as zeros (false: not done). */
  releasePages(buf: Buffer): boolean;
  /** malloc_trim(0): free pages inside glibc's arenas go back to the kernel (true: some did). */
  trimMalloc(): boolean;
  /** Bytes glibc's malloc has handed out and not got back (mallinfo2: uordblks + hblkhd). */
  mallocInUseBytes(): number;
  /** syncfs(2) of fd's file system on a libuv pool thread (native/fsys/syncfs.cc); rejects with code = errno name. */
  syncfs(fd: number): Promise<void>;
}

const ADDON_NAME = 'chunkfs_rs.node';
const SEARCH_DEPTH_MAX = 6;

function findAddon(): string {
  // Runs from src/ (ts) or dist/src/ (js): walk up to the folder with binding.gyp.
  let dir = __dirname;
  for (let depth = 0; depth < SEARCH_DEPTH_MAX; depth++) {
    if (fs.existsSync(path.join(dir, 'binding.gyp'))) return path.join(dir, 'build', 'Release', ADDON_NAME);
    dir = path.dirname(dir);
  }
  throw new UnsupportedError(`native addon (Reed-Solomon, HighwayHash): binding.gyp not found above ${__dirname}`);
}

let loaded: RsNative | undefined;

export function rsNative(): RsNative {
  if (loaded !== undefined) return loaded;
  const addonPath = findAddon();
  if (!fs.existsSync(addonPath)) {
    throw new UnsupportedError(
      `native addon (Reed-Solomon, HighwayHash) missing at ${addonPath}: run \`npm run setup\` (or \`npm ci\`) with g++ and python3 installed`,
    );
  }
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  loaded = require(addonPath) as RsNative;
  return loaded;
}
