// The transforms a layout names (DESIGN §10, spec §3.1 bits 1 and 2): at most one
// compression and at most one encryption, written after the placement part of the layout
// text: 'replica:3,zstd', 'ec:4+2,lz4', 'ec:4+2,zstd,aes256gcm', 'replica:2,zstd:9'.
// Canonical text: compression first, then encryption (stored = encrypt(compress(raw))).

export type CompressionAlgo = 'zstd' | 'lz4';
export type EncryptionAlgo = 'aes256gcm';

export interface ChunkTransforms {
  compression: { algo: CompressionAlgo; level: number } | null;
  encryption: EncryptionAlgo | null;
}

export const NO_TRANSFORMS: ChunkTransforms = Object.freeze({ compression: null, encryption: null });
export const ZSTD_LEVEL_DEFAULT = 3; // the zstd CLI's default: the benchmark compares at the same level
export const ZSTD_LEVEL_MAX = 19; // levels above need --ultra in the CLI and much memory
export const LZ4_LEVEL = 1; // LZ4 block, fast mode (the lz4 CLI's default -1)

/** A transform name that does not parse: says which and what is allowed. */
export class TransformNameError extends Error {
  readonly code = 'EINVAL';
  constructor(
    readonly transformName: string,
    reason: string,
  ) {
    super(
      `transform '${transformName}': ${reason} (known: zstd, zstd:1..${ZSTD_LEVEL_MAX}, lz4, aes256gcm; compression before encryption)`,
    );
  }
}

function parseCompression(name: string): ChunkTransforms['compression'] | undefined {
  if (name === 'lz4') return { algo: 'lz4', level: LZ4_LEVEL };
  if (name === 'zstd') return { algo: 'zstd', level: ZSTD_LEVEL_DEFAULT };
  const m = /^zstd:([0-9]{1,2})$/.exec(name);
  if (m === null) return undefined;
  const level = Number(m[1]);
  if (level < 1 || level > ZSTD_LEVEL_MAX)
    throw new TransformNameError(name, `zstd level must be 1..${ZSTD_LEVEL_MAX}`);
  return { algo: 'zstd', level };
}

/** The transforms named by the comma-separated parts after a layout's placement part. */
export function parseTransforms(names: readonly string[]): ChunkTransforms {
  let compression: ChunkTransforms['compression'] = null;
  let encryption: EncryptionAlgo | null = null;
  for (const name of names) {
    const c = parseCompression(name);
    if (c !== undefined) {
      if (compression !== null) throw new TransformNameError(name, 'a layout has at most one compression');
      if (encryption !== null)
        throw new TransformNameError(name, 'compression comes before encryption (stored = encrypt(compress(raw)))');
      compression = c;
    } else if (name === 'aes256gcm') {
      if (encryption !== null) throw new TransformNameError(name, 'a layout has at most one encryption');
      encryption = name;
    } else {
      throw new TransformNameError(name, name === '' ? 'empty name' : 'unknown');
    }
  }
  return { compression, encryption };
}

/** The canonical names, in order ('' for none): zstd at its default level is plain 'zstd'. */
export function transformNames(t: ChunkTransforms): string[] {
  const out: string[] = [];
  if (t.compression !== null) {
    const { algo, level } = t.compression;
    out.push(algo === 'zstd' && level !== ZSTD_LEVEL_DEFAULT ? `zstd:${level}` : algo);
  }
  if (t.encryption !== null) out.push(t.encryption);
  return out;
}

export function hasTransforms(t: ChunkTransforms): boolean {
  return t.compression !== null || t.encryption !== null;
}
