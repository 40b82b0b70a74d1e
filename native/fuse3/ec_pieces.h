// Chunk <-> shard byte mapping of an EC(k,m) chunk (spec §6) for read grants (read_grant.h), with
// the short last erasure block rule of DESIGN §3: full erasure blocks use shard_fragment =
// ceil(EB/k), the last block of length L < EB uses ceil(L/k); shard_offset = eb_index *
// ceil(EB/k) + off_in_fragment always holds. The mapping is over the stored payload (post-transform,
// chunk_logical_len). src/mapping.ts is its JavaScript twin (mapRange): the two must agree.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fuse3 {

struct EcGeometry {
  uint64_t k = 0;
  uint64_t ebBytes = 0;          // ec_block_size
  uint64_t payloadLenBytes = 0;  // chunk_logical_len
};

// One contiguous run of payload bytes inside one data shard.
struct EcPiece {
  uint32_t shard = 0;
  uint64_t shardOffsetBytes = 0;
  uint64_t lengthBytes = 0;
  uint64_t payloadOffsetBytes = 0;
};

// shard_data_len of every shard of g (spec §3 field, DESIGN §3): (n_eb - 1) * ceil(EB/k) + ceil(L/k).
inline uint64_t EcShardDataLen(const EcGeometry& g) {
  if (g.payloadLenBytes == 0) return 0;
  const uint64_t n = (g.payloadLenBytes + g.ebBytes - 1) / g.ebBytes;
  const uint64_t lastLen = g.payloadLenBytes - (n - 1) * g.ebBytes;
  return (n - 1) * ((g.ebBytes + g.k - 1) / g.k) + (lastLen + g.k - 1) / g.k;
}

// Pieces of payload range [lo, hi) in payload order into out (cleared first). False when more than
// piecesMax would be needed or the range is outside the payload: the caller declines.
inline bool EcPiecesOf(const EcGeometry& g, uint64_t lo, uint64_t hi, size_t piecesMax, std::vector<EcPiece>* out) {
  out->clear();
  if (hi > g.payloadLenBytes || g.k == 0 || g.ebBytes == 0) return false;
  const uint64_t fullFragment = (g.ebBytes + g.k - 1) / g.k;
  for (uint64_t c = lo; c < hi;) {
    if (out->size() >= piecesMax) return false;
    const uint64_t eb = c / g.ebBytes;
    const uint64_t ebStart = eb * g.ebBytes;
    const uint64_t ebLen = g.payloadLenBytes - ebStart < g.ebBytes ? g.payloadLenBytes - ebStart : g.ebBytes;
    const uint64_t fragment = (ebLen + g.k - 1) / g.k;
    const uint64_t offInEb = c - ebStart;
    const uint64_t shard = offInEb / fragment;
    const uint64_t offInFragment = offInEb % fragment;
    uint64_t len = hi - c;
    if (fragment - offInFragment < len) len = fragment - offInFragment;
    if (ebStart + ebLen - c < len) len = ebStart + ebLen - c;
    if (shard >= g.k || len == 0) return false;  // cannot happen for a checked geometry; never loop
    out->push_back(EcPiece{static_cast<uint32_t>(shard), eb * fullFragment + offInFragment, len, c});
    c += len;
  }
  return true;
}

}  // namespace fuse3
