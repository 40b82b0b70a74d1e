// Kernel dispatch and the per-shard batch calls (spec §4.1 keys, §4 entries,
// §9 verification): one call hashes every bitrot block of a shard range.
#include "highwayhash.h"

#include <cstring>

namespace hh {
namespace {

bool Supported(Kernel kernel) {
  if (kernel == kScalar) return true;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (kernel == kAvx2) return __builtin_cpu_supports("avx2");
#endif
  return false;
}

Kernel g_active = DetectKernel();

inline void BlockKey(const ShardKey& key, uint32_t blockIndex, uint64_t out[4]) {
  out[0] = key.words[0];
  out[1] = key.words[1];
  out[2] = key.words[2] ^ blockIndex;  // spec §4.1: block_index in key2's low 32 bits
  out[3] = key.words[3];
}

}  // namespace

const char* KernelName(Kernel kernel) {
  static const char* const names[kKernelCount] = {"scalar", "avx2"};
  return kernel >= 0 && kernel < kKernelCount ? names[kernel] : "unknown";
}

Kernel DetectKernel() { return Supported(kAvx2) ? kAvx2 : kScalar; }

Kernel ActiveKernel() { return g_active; }

Kernel SetKernel(Kernel wanted) {
  g_active = Supported(wanted) ? wanted : kScalar;
  return g_active;
}

void Hash256(const uint64_t key[4], const uint8_t* data, size_t length, uint8_t digest[kDigestBytes]) {
  if (g_active == kAvx2) {
    Hash256Avx2(key, data, length, digest);
  } else {
    Hash256Scalar(key, data, length, digest);
  }
}

ShardKey MakeShardKey(const uint64_t base[4], uint64_t fileId, uint64_t chunkIndex, uint32_t shardIndex,
                      uint64_t version) {
  ShardKey key;
  key.words[0] = base[0] ^ fileId;
  key.words[1] = base[1] ^ chunkIndex;
  key.words[2] = base[2] ^ (static_cast<uint64_t>(shardIndex) << 32);
  key.words[3] = base[3] ^ version;
  return key;
}

// Digests of blocks [j, j+count) of the range (count 1 or 2) into out. With AVX2,
// two full blocks are hashed interleaved (Hash256x2Avx2).
static void HashPair(const ShardKey& key, uint32_t firstBlock, const uint8_t* data, size_t length, size_t blockBytes,
              size_t j, bool pair, uint8_t* out) {
  uint64_t ka[4], kb[4];
  const size_t off = j * blockBytes;
  BlockKey(key, firstBlock + static_cast<uint32_t>(j), ka);
  if (pair) {
    BlockKey(key, firstBlock + static_cast<uint32_t>(j + 1), kb);
    Hash256x2Avx2(ka, kb, data + off, data + off + blockBytes, blockBytes, out, out + kDigestBytes);
    return;
  }
  const size_t n = length - off < blockBytes ? length - off : blockBytes;
  Hash256(ka, data + off, n, out);
}

// Next step of a batch walk from block j: two blocks if both are full and the
// AVX2 kernel is active, else one.
static inline bool PairAt(size_t j, size_t length, size_t blockBytes) {
  return g_active == kAvx2 && (j + 2) * blockBytes <= length;
}

void HashBlocks(const ShardKey& key, uint32_t firstBlock, const uint8_t* data, size_t length, size_t blockBytes,
                uint8_t* out) {
  const size_t count = (length + blockBytes - 1) / blockBytes;
  for (size_t j = 0; j < count;) {
    const bool pair = PairAt(j, length, blockBytes);
    HashPair(key, firstBlock, data, length, blockBytes, j, pair, out + j * kDigestBytes);
    j += pair ? 2 : 1;
  }
}

int64_t VerifyBlocks(const ShardKey& key, uint32_t firstBlock, const uint8_t* data, size_t length, size_t blockBytes,
                     const uint8_t* entries) {
  const size_t count = (length + blockBytes - 1) / blockBytes;
  uint8_t digests[2 * kDigestBytes];
  for (size_t j = 0; j < count;) {
    const bool pair = PairAt(j, length, blockBytes);
    HashPair(key, firstBlock, data, length, blockBytes, j, pair, digests);
    // Compare in block order so the first bad block is reported (spec §9).
    for (size_t q = 0; q < (pair ? 2u : 1u); q++) {
      if (std::memcmp(digests + q * kDigestBytes, entries + (j + q) * kDigestBytes, kDigestBytes) != 0) {
        return static_cast<int64_t>(j + q);
      }
    }
    j += pair ? 2 : 1;
  }
  return -1;
}

}  // namespace hh
