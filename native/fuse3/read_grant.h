// Read grants (issue 20 item 2, DESIGN §6): verified reads of clean replica chunks answered in C on
// the thread that read the request (JS dispatch), without a JS round trip. JS grants a chunk after
// it served a read of it and found nothing that the grant could miss (no buffered or logged bytes,
// no compression, no fault set: fs/fuse/read-grants.ts); every byte served here is still checked
// against its position-bound HighwayHash-256 entry (spec §4.1, §9) before it is used. An encrypted
// chunk (spec §3.1 bit 2, cipher format v2: native/cipher/gcm_segments.h) is served by segments:
// the stored segments under the range read and verified, then opened, each tag checked before a
// byte is sent (issue 23). Anything else (another chunk, a failed pread, a block that does not
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

namespace fuse3 {

// Bounds: chunks granted at once (each holds a descriptor and its hash table), one table's bytes
// (a 4 MiB chunk of 16 KiB blocks: 8 KiB), and one answer's bytes (max_read is 1 MiB).
constexpr size_t kGrantChunksMax = 1024;
constexpr size_t kGrantTableBytesMax = size_t{64} << 10;
constexpr size_t kGrantServeBytesMax = size_t{1} << 20;

// What JS hands over for one chunk of one file (all lengths in bytes).
struct GrantSpec {
  uint64_t ino = 0;
  uint64_t chunkIndex = 0;
  uint64_t chunkSizeBytes = 0;
  uint64_t fileSizeBytes = 0;       // the mount's size of the file (reads past it are short)
  uint64_t dataAtBytes = 0;         // shard file offset of block 0's data (spec §2 region 3)
  uint64_t blockBytes = 0;          // bitrot block (spec §4)
  uint64_t shardDataLenBytes = 0;   // shard_data_len: a replica's payload
  uint64_t logicalLenBytes = 0;     // the chunk's logical length (content_len): past it, zeros (a hole)
  uint64_t ttlMs = 0;               // a grant lives at most this long (relatime's day boundary)
  std::string path;                 // the verified replica's shard file
  uint64_t keyWords[4] = {};        // block 0's position-bound key words (spec §4.1)
  std::vector<uint8_t> table;       // hash entries of every block, as the JS read verified them
  // Encrypted chunks only (segmentBytes > 0): the shard data is a cipher format v2 payload of
  // logicalLenBytes plain bytes; its segment size, its header's nonce base, the version's data key.
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
  // The JS thread (JS dispatch only): answers the read and returns true, or returns false and
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
    int fd = -1;
    uint64_t epoch = 0;
    int64_t expiresNs = 0;
    hh::ShardKey key{};
  };
  static uint64_t Key(uint64_t ino, uint64_t chunkIndex) { return ino * 1000003u ^ chunkIndex; }
  void Drop(std::unordered_map<uint64_t, Grant>::iterator it);
  void Clear();
  bool Answer(fuse_req_t req, const Grant& g, uint64_t lo, uint64_t hi);
  bool AnswerEncrypted(fuse_req_t req, const Grant& g, uint64_t lo, uint64_t hi);
  // Stored blocks covering shard data [lo, hi) read into scratch_ and verified; the span's start.
  bool ReadVerified(const Grant& g, uint64_t lo, uint64_t hi, uint64_t* spanStart);

  std::atomic<uint64_t> epoch_{1};
  std::unordered_map<uint64_t, Grant> grants_;
  // Per file: the chunk size of its grants (which chunk a read falls in), by ino.
  std::unordered_map<uint64_t, uint64_t> chunkSizes_;
  std::vector<uint8_t> scratch_;
  std::vector<uint8_t> plain_;  // decrypted segments of an encrypted grant's answer
  uint64_t served_ = 0;
  uint64_t declined_ = 0;
  uint64_t servedBytes_ = 0;
};

}  // namespace fuse3
