// Read grants (DESIGN §6): verified reads of clean replica and EC chunks answered
// in C on the JS thread, which read the request, without a JS round trip. JS grants a chunk after
// it served a read of it and found nothing that the grant could miss (no buffered or logged bytes,
// no compression, no fault set: fs/fuse/read-grants.ts); every byte served here is still checked
// against its position-bound HighwayHash-256 entry (spec §4.1, §9) before it is used. An encrypted
// chunk (spec §3.1 bit 2, cipher format v2: native/cipher/gcm_segments.h) is served by segments:
// the stored segments under the range read and verified, then opened, each tag checked before a
// byte is sent. An EC(k,m) chunk is served from its data shards alone (spec §6,
// ec_pieces.h): each piece's blocks read and verified in its shard, the pieces joined; a data
// shard JS has not yet read (its header and table not cached) is not granted: a read needing it
// goes to JS without a failure. Nothing is ever reconstructed here. Anything else (another chunk, a failed pread, a block that does not
// verify, a tag that fails, a stale grant) goes to JS, where failover, counting and heal live: one
// read pipeline.
//
// Revocation is by epoch: every grant carries the epoch it was made in and is void once the epoch
// moves. The epoch moves when a request that may change any file arrives and again when it is
// answered (lowlevel_ops.cc, session.cc Take), and when the store changes anything a read shows
// (chunk map, intents, shard files, disk health, injected faults: JS calls Bump).
#pragma once
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "../cipher/gcm_segments.h"
#include "../highway/highwayhash.h"
#include "ec_pieces.h"

namespace fuse3 {

// Bounds: chunks granted at once (each holds a descriptor and a hash table per granted shard), the
// descriptors they hold together (an EC grant holds up to k), one table's bytes (a 4 MiB chunk of
// 16 KiB blocks: 8 KiB), one answer's bytes (max_read is 1 MiB), data shards of one EC grant (spec
// §3 ec_k), and the pieces one EC answer is split into (1 MiB over 256 KiB fragments: 5 or so).
constexpr size_t kGrantChunksMax = 1024;
constexpr size_t kGrantDescriptorsMax = 4096;
constexpr size_t kGrantTableBytesMax = size_t{64} << 10;
constexpr size_t kGrantServeBytesMax = size_t{1} << 20;
constexpr size_t kGrantDataShardsMax = 32;
constexpr size_t kGrantPiecesMax = 1024;

// One granted shard of a chunk: a replica chunk's verified replica, or one data shard of an EC chunk.
struct GrantShard {
  std::string path;                 // the shard file; empty: not granted (reads needing it go to JS)
  uint64_t keyWords[4] = {};        // block 0's position-bound key words (spec §4.1)
  std::vector<uint8_t> table;       // hash entries of every block, as the JS read verified them
};

// What JS hands over for one chunk of one file (all lengths in bytes).
struct GrantSpec {
  uint64_t ino = 0;
  uint64_t chunkIndex = 0;
  uint64_t chunkSizeBytes = 0;
  uint64_t fileSizeBytes = 0;       // the mount's size of the file (reads past it are short)
  uint64_t dataAtBytes = 0;         // shard file offset of block 0's data (spec §2 region 3)
  uint64_t blockBytes = 0;          // bitrot block (spec §4)
  uint64_t shardDataLenBytes = 0;   // shard_data_len (spec §3): every shard's, replica or EC
  uint64_t logicalLenBytes = 0;     // the chunk's logical length (content_len): past it, zeros (a hole)
  uint64_t payloadLenBytes = 0;     // the stored payload (chunk_logical_len): the content, or its v2 payload
  uint64_t ttlMs = 0;               // a grant lives at most this long (relatime's day boundary)
  uint64_t ecK = 0;                 // 0: a replica chunk, shards holds its one replica; else EC(k,m)
  uint64_t ecBlockBytes = 0;        // EC: ec_block_size (spec §6)
  std::vector<GrantShard> shards;   // replica: 1; EC: the k data shards, in shard order
  // Encrypted chunks only (segmentBytes > 0): the payload is cipher format v2 of logicalLenBytes
  // plain bytes; its segment size, its header's nonce base, the version's data key.
  uint64_t segmentBytes = 0;
  uint8_t nonceBase[gcm::kNonceBytes] = {};
  uint8_t dataKey[gcm::kKeyBytes] = {};
};

class ReadGrants {
 public:
  ~ReadGrants() { Clear(); }
  // Any thread: every grant made so far is void.
  void Bump() { epoch_.fetch_add(1, std::memory_order_acq_rel); }
  // The JS thread: Bump, and close every grant's descriptor now, so a shard the store deletes next
  // (a freed version, a deleted file) gives its space back at once, not at the next grant.
  void Revoke() {
    Bump();
    Clear();
  }
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  // The JS thread. False (nothing kept) when the epoch moved since JS read it, or the spec is bad.
  bool Add(uint64_t epoch, GrantSpec spec, std::string* why);
  // The JS thread: answers the read and returns true, or returns false and
  // leaves the request to JS. Never throws, never answers with unverified bytes.
  bool Serve(fuse_req_t req, uint64_t ino, size_t size, off_t off);
  uint64_t served() const { return served_; }
  uint64_t declined() const { return declined_; }
  uint64_t servedBytes() const { return servedBytes_; }
  // Grants of the current epoch (older ones are void, closed at the next Add or Serve of theirs).
  size_t live() const {
    size_t n = 0;
    for (const auto& [k, g] : grants_) n += g.epoch == epoch() ? 1 : 0;
    return n;
  }

 private:
  struct Grant {
    GrantSpec spec;
    std::vector<int> fds;            // per spec.shards entry; -1: not granted
    std::vector<hh::ShardKey> keys;  // per spec.shards entry
    uint64_t epoch = 0;
    int64_t expiresNs = 0;
  };
  // Why an answer was not sent: a failure (JS reads again, fails over, counts, heals) or a piece in
  // a data shard not granted (JS reads it as any read; nothing failed).
  enum class Outcome { kAnswered, kFailed, kNotGranted };
  static uint64_t Key(uint64_t ino, uint64_t chunkIndex) { return ino * 1000003u ^ chunkIndex; }
  void Drop(std::unordered_map<uint64_t, Grant>::iterator it);
  void Clear();
  static bool SameShards(const GrantSpec& a, const GrantSpec& b);
  Outcome Answer(fuse_req_t req, const Grant& g, uint64_t lo, uint64_t hi);
  Outcome AnswerEncrypted(fuse_req_t req, const Grant& g, uint64_t lo, uint64_t hi);
  // Stored payload [lo, hi) verified; *bytes points at it (in scratch_ or joined_) until the next read.
  Outcome ReadStored(const Grant& g, uint64_t lo, uint64_t hi, const uint8_t** bytes);
  Outcome ReadStoredEc(const Grant& g, uint64_t lo, uint64_t hi, const uint8_t** bytes);
  // Stored blocks covering shard i's data [lo, hi) read into scratch_ and verified; the span's start.
  bool ReadVerified(const Grant& g, size_t i, uint64_t lo, uint64_t hi, uint64_t* spanStart);

  std::atomic<uint64_t> epoch_{1};
  std::unordered_map<uint64_t, Grant> grants_;
  // Per file: the chunk size of its grants (which chunk a read falls in), by ino.
  std::unordered_map<uint64_t, uint64_t> chunkSizes_;
  size_t descriptors_ = 0;  // open across grants_ (kGrantDescriptorsMax)
  std::vector<uint8_t> scratch_;
  std::vector<uint8_t> joined_;  // an EC grant's stored payload range, its pieces joined
  std::vector<EcPiece> pieces_;
  std::vector<uint8_t> plain_;   // decrypted segments of an encrypted grant's answer, or a padded one
  uint64_t served_ = 0;
  uint64_t declined_ = 0;
  uint64_t servedBytes_ = 0;
};

}  // namespace fuse3
