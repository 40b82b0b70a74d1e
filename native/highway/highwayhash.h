// HighwayHash-256 (spec §4, csum_algo = 1) with position-bound keys (spec §4.1),
// batched over the bitrot blocks of one shard range so the JS side makes one
// call per range instead of one per 16 KiB block.
// Digest = the four u64 result words, each little-endian (DESIGN.md §3).
#pragma once
#include <cstddef>
#include <cstdint>

namespace hh {

constexpr size_t kKeyBytes = 32;
constexpr size_t kDigestBytes = 32;
constexpr size_t kPacketBytes = 32;

enum Kernel { kScalar = 0, kAvx2 = 1, kKernelCount = 2 };

const char* KernelName(Kernel kernel);
// The best kernel this CPU supports (scalar on non-x86).
Kernel DetectKernel();
Kernel ActiveKernel();
// Clamp to what the CPU supports and make it active (tests force scalar).
Kernel SetKernel(Kernel wanted);

// One HighwayHash-256 of data[0, length) under key (4 u64 words).
void Hash256(const uint64_t key[4], const uint8_t* data, size_t length, uint8_t digest[kDigestBytes]);

// The fixed part of a shard's position-bound key (spec §4.1); block_index is
// XOR-ed into the low 32 bits of key2 per block.
struct ShardKey {
  uint64_t words[4];
};
ShardKey MakeShardKey(const uint64_t base[4], uint64_t fileId, uint64_t chunkIndex, uint32_t shardIndex,
                      uint64_t version);

// Digests of the blocks of data[0, length) (block i = blockBytes bytes except a
// short last one), block indexes firstBlock.., written to out (32 bytes each).
void HashBlocks(const ShardKey& key, uint32_t firstBlock, const uint8_t* data, size_t length, size_t blockBytes,
                uint8_t* out);

// Index (0-based within this range) of the first block whose digest differs
// from entries (32 bytes per block), or -1 when all match.
int64_t VerifyBlocks(const ShardKey& key, uint32_t firstBlock, const uint8_t* data, size_t length, size_t blockBytes,
                     const uint8_t* entries);

// Kernel entry points (highwayhash_scalar.cc, highwayhash_avx2.cc).
void Hash256Scalar(const uint64_t key[4], const uint8_t* data, size_t length, uint8_t digest[kDigestBytes]);
void Hash256Avx2(const uint64_t key[4], const uint8_t* data, size_t length, uint8_t digest[kDigestBytes]);
// Two equal-length inputs interleaved (the batch calls pair full blocks).
void Hash256x2Avx2(const uint64_t keyA[4], const uint64_t keyB[4], const uint8_t* a, const uint8_t* b, size_t length,
                   uint8_t digestA[kDigestBytes], uint8_t digestB[kDigestBytes]);

// Shared helpers: the constants, the tail packet and the 256-bit reduction are
// the same for both kernels.
extern const uint64_t kInitMul0[4];
extern const uint64_t kInitMul1[4];
// Builds the 32-byte packet for the last (length % 32) bytes at tail (length % 32 > 0).
void TailPacket(const uint8_t* tail, size_t tailBytes, uint8_t packet[kPacketBytes]);
// Final step of the 256-bit variant: from the finalized state to the digest bytes.
void Reduce256(const uint64_t v0[4], const uint64_t v1[4], const uint64_t mul0[4], const uint64_t mul1[4],
               uint8_t digest[kDigestBytes]);

}  // namespace hh
