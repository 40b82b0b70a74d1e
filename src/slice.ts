// Slice pointer (spec §11.3) and the slice read (spec §11.4): which container
// shard ranges to read, and the needle checks after the bytes arrive. A needle
// never crosses a container chunk boundary (DESIGN §3), so one chunk is touched.
import { crc32c } from './crc32c';
import { ErrorSite, FormatError, SliceError, UnsupportedError } from './errors';
import { mapRange } from './mapping';
import {
  NEEDLE_FLAG_COMPRESSED,
  NEEDLE_FLAG_DELETED,
  NEEDLE_FLAG_ENCRYPTED,
  NEEDLE_HEADER_BYTES,
  decodeNeedleHeader,
} from './needle';

export interface Slice {
  containerId: bigint;
  offsetBytes: bigint;
  lengthBytes: number;
  cookie: number;
}

export interface ContainerLayout {
  mode: 'replica' | 'ec';
  k: number;
  m: number;
  chunkSizeBytes: number;
  ecBlockSizeBytes: number;
  /** Logical length of a container chunk; defaults to chunkSizeBytes (a full chunk). */
  chunkLogicalLenBytes?: (chunkIndex: bigint) => number;
}

export interface SliceReadPiece {
  chunkIndex: bigint;
  shardIndex: number;
  shardOffsetBytes: number;
  lengthBytes: number;
}

function sliceSite(slice: Slice): ErrorSite {
  return { fileId: slice.containerId };
}

/**
 * The shard ranges holding [offset, offset + 32 + length) of the container stream,
 * in stream order. Replica: shard 0 names the first replica (any healthy replica
 * holds the same bytes). EC: data shards only (spec §6 fast path, no parity).
 */
export function planSliceRead(slice: Slice, container: ContainerLayout): SliceReadPiece[] {
  const site = sliceSite(slice);
  if (!Number.isSafeInteger(container.chunkSizeBytes) || container.chunkSizeBytes <= 0) {
    throw new FormatError('chunk_size', `${container.chunkSizeBytes} must be positive`, site);
  }
  if (!Number.isInteger(slice.lengthBytes) || slice.lengthBytes < 0 || slice.lengthBytes > 0xffffffff) {
    throw new SliceError('length', `${slice.lengthBytes} is not a u32`, site);
  }
  const chunkSize = BigInt(container.chunkSizeBytes);
  const chunkIndex = slice.offsetBytes / chunkSize;
  const offInChunk = Number(slice.offsetBytes % chunkSize);
  const spanBytes = NEEDLE_HEADER_BYTES + slice.lengthBytes;
  const chunkLen = container.chunkLogicalLenBytes?.(chunkIndex) ?? container.chunkSizeBytes;
  if (slice.offsetBytes < 0n || offInChunk + spanBytes > chunkLen) {
    throw new SliceError(
      'offset',
      `needle [${slice.offsetBytes}, +${spanBytes}) does not fit container chunk ${chunkIndex} of ${chunkLen} bytes`,
      site,
    );
  }
  if (container.mode === 'replica') {
    return [{ chunkIndex, shardIndex: 0, shardOffsetBytes: offInChunk, lengthBytes: spanBytes }];
  }
  const g = {
    k: container.k,
    m: container.m,
    ecBlockSizeBytes: container.ecBlockSizeBytes,
    chunkLogicalLenBytes: chunkLen,
  };
  const pieces: SliceReadPiece[] = [];
  for (const p of mapRange(g, offInChunk, spanBytes)) {
    const prev = pieces[pieces.length - 1];
    if (
      prev !== undefined &&
      prev.shardIndex === p.dataShard &&
      prev.shardOffsetBytes + prev.lengthBytes === p.shardOffsetBytes
    ) {
      prev.lengthBytes += p.lengthBytes; // contiguous in the same shard: one read
    } else {
      pieces.push({
        chunkIndex,
        shardIndex: p.dataShard,
        shardOffsetBytes: p.shardOffsetBytes,
        lengthBytes: p.lengthBytes,
      });
    }
  }
  return pieces;
}

/**
 * Check the fetched needle header + data against the slice and the inode
 * (spec §11.4 step 4) and return Data[0..length] (a view).
 */
export function checkNeedle(slice: Slice, inodeFileId: bigint, headerAndData: Uint8Array): Buffer {
  const site: ErrorSite = { fileId: inodeFileId };
  let header;
  try {
    header = decodeNeedleHeader(headerAndData, site);
  } catch (e) {
    if (e instanceof FormatError) throw new SliceError(e.field, e.message, site);
    throw e;
  }
  if (header.fileId !== inodeFileId)
    throw new SliceError('file_id', `needle belongs to ${header.fileId}, not inode ${inodeFileId}`, site);
  if (header.cookie !== slice.cookie)
    throw new SliceError('cookie', `needle cookie ${header.cookie} != slice cookie ${slice.cookie}`, site);
  if (header.dataLenBytes !== slice.lengthBytes)
    throw new SliceError('length', `needle data_len ${header.dataLenBytes} != slice length ${slice.lengthBytes}`, site);
  if ((header.flags & NEEDLE_FLAG_DELETED) !== 0) throw new SliceError('flags', 'needle is marked deleted', site);
  if ((header.flags & (NEEDLE_FLAG_COMPRESSED | NEEDLE_FLAG_ENCRYPTED)) !== 0) {
    throw new UnsupportedError(
      `compressed/encrypted needles are not supported (flags 0x${header.flags.toString(16)})`,
      site,
    );
  }
  if (headerAndData.length < NEEDLE_HEADER_BYTES + header.dataLenBytes) {
    throw new SliceError(
      'data',
      `truncated: ${headerAndData.length - NEEDLE_HEADER_BYTES} of ${header.dataLenBytes} data bytes`,
      site,
    );
  }
  const b = Buffer.from(headerAndData.buffer, headerAndData.byteOffset, headerAndData.byteLength);
  const data = b.subarray(NEEDLE_HEADER_BYTES, NEEDLE_HEADER_BYTES + header.dataLenBytes);
  const crc = crc32c(data);
  if (crc !== header.dataCrc32c)
    throw new SliceError('data_crc32c', `stored ${header.dataCrc32c} != computed ${crc}`, site);
  return data;
}
