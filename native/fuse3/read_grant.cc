// Read grants (read_grant.h): the verified read of one granted chunk range, answered here.
#include "read_grant.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace fuse3 {
namespace {

int64_t MonotonicNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

// The spec's geometry holds together (pair assertion with fs/fuse/read-grants.ts): a bad grant is
// refused, never used.
const char* CheckSpec(const GrantSpec& s) {
  if (s.chunkSizeBytes == 0 || s.blockBytes == 0) return "zero chunk or block size";
  if (s.logicalLenBytes > s.chunkSizeBytes) return "logical length past the chunk size";
  if (s.shardDataLenBytes < s.logicalLenBytes) return "shard data shorter than the logical length";
  const uint64_t blocks = (s.shardDataLenBytes + s.blockBytes - 1) / s.blockBytes;
  if (s.table.size() != blocks * hh::kDigestBytes) return "hash table size is not one entry per block";
  if (s.table.size() > kGrantTableBytesMax) return "hash table too large";
  if (blocks > 0xffffffffu) return "more blocks than a u32 block index";
  if (s.path.empty()) return "no shard path";
  return nullptr;
}

}  // namespace

void ReadGrants::Drop(std::unordered_map<uint64_t, Grant>::iterator it) {
  if (it->second.fd >= 0) close(it->second.fd);
  grants_.erase(it);
}

void ReadGrants::Clear() {
  for (auto& [k, g] : grants_) {
    if (g.fd >= 0) close(g.fd);
  }
  grants_.clear();
  chunkSizes_.clear();
}

bool ReadGrants::Add(uint64_t epoch, GrantSpec spec, std::string* why) {
  if (epoch != this->epoch()) {
    *why = "stale epoch";
    return false;
  }
  if (const char* bad = CheckSpec(spec)) {
    *why = bad;
    return false;
  }
  // Grants of older epochs are void: drop them all before a bound is reached.
  if (grants_.size() >= kGrantChunksMax) Clear();
  for (auto it = grants_.begin(); it != grants_.end();) {
    if (it->second.epoch == epoch) { ++it; continue; }
    auto next = std::next(it);
    Drop(it);
    it = next;
  }
  const uint64_t k = Key(spec.ino, spec.chunkIndex);
  auto old = grants_.find(k);
  if (old != grants_.end() && old->second.epoch == epoch && old->second.spec.path == spec.path &&
      old->second.spec.ino == spec.ino && old->second.spec.chunkIndex == spec.chunkIndex &&
      old->second.spec.fileSizeBytes == spec.fileSizeBytes && old->second.spec.logicalLenBytes == spec.logicalLenBytes) {
    // The same shard in the same epoch (a grant that lapsed, asked again): a new lifetime, same descriptor.
    old->second.expiresNs = MonotonicNs() + static_cast<int64_t>(spec.ttlMs) * 1000000LL;
    return true;
  }
  if (old != grants_.end()) Drop(old);
  int fd = open(spec.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = std::string("open ") + spec.path + ": " + std::strerror(errno);
    return false;
  }
  Grant g;
  g.fd = fd;
  g.epoch = epoch;
  g.expiresNs = MonotonicNs() + static_cast<int64_t>(spec.ttlMs) * 1000000LL;
  for (int w = 0; w < 4; w++) g.key.words[w] = spec.keyWords[w];
  chunkSizes_[spec.ino] = spec.chunkSizeBytes;
  g.spec = std::move(spec);
  grants_.emplace(k, std::move(g));
  return true;
}

bool ReadGrants::Serve(fuse_req_t req, uint64_t ino, size_t size, off_t off) {
  if (grants_.empty() || off < 0 || size == 0 || size > kGrantServeBytesMax) return false;
  auto cs = chunkSizes_.find(ino);
  if (cs == chunkSizes_.end()) return false;
  const uint64_t offBytes = static_cast<uint64_t>(off);
  const uint64_t chunk = offBytes / cs->second;
  auto it = grants_.find(Key(ino, chunk));
  if (it == grants_.end() || it->second.spec.ino != ino || it->second.spec.chunkIndex != chunk) return false;
  Grant& g = it->second;
  if (g.epoch != epoch()) {
    Drop(it);
    return false;
  }
  if (MonotonicNs() > g.expiresNs) return false;  // lapsed: JS reads it and renews the grant (Add)
  // The chunk size remembered for ino may be an earlier file's of the same number: the grant's own decides.
  if (offBytes / g.spec.chunkSizeBytes != chunk) return false;
  const uint64_t chunkStart = chunk * g.spec.chunkSizeBytes;
  uint64_t end = offBytes + size;
  if (end > g.spec.fileSizeBytes) end = g.spec.fileSizeBytes;
  if (offBytes >= end) return false;  // at or past the end: JS answers (it may know a newer size)
  if ((end - 1) / g.spec.chunkSizeBytes != chunk) return false;  // spans chunks: JS
  if (!Answer(req, g, offBytes - chunkStart, end - chunkStart)) {
    declined_++;
    Drop(it);  // JS reads it again, fails over and heals (DESIGN §6); the next JS read may re-grant
    return false;
  }
  served_++;
  return true;
}

// Chunk range [lo, hi): the stored blocks under [lo, min(hi, logical)) read and verified, zeros
// after (a hole past the logical length), then answered. False before anything was answered.
bool ReadGrants::Answer(fuse_req_t req, const Grant& g, uint64_t lo, uint64_t hi) {
  const GrantSpec& s = g.spec;
  const uint64_t dataHi = hi < s.logicalLenBytes ? hi : s.logicalLenBytes;
  const uint64_t bb = s.blockBytes;
  uint64_t first = 0, spanStart = 0, spanLen = 0;
  if (lo < dataHi) {
    first = lo / bb;
    const uint64_t last = (dataHi - 1) / bb;
    spanStart = first * bb;
    const uint64_t spanEnd = (last + 1) * bb < s.shardDataLenBytes ? (last + 1) * bb : s.shardDataLenBytes;
    spanLen = spanEnd - spanStart;
  }
  const uint64_t skip = spanLen > 0 ? lo - spanStart : 0;
  const uint64_t outLen = hi - lo;
  const size_t need = static_cast<size_t>(spanLen > skip + outLen ? spanLen : skip + outLen);
  if (scratch_.size() < need) scratch_.resize(need);
  uint8_t* buf = scratch_.data();
  if (spanLen > 0) {
    ssize_t got = pread(g.fd, buf, spanLen, static_cast<off_t>(s.dataAtBytes + spanStart));
    if (got != static_cast<ssize_t>(spanLen)) return false;
    const uint8_t* entries = s.table.data() + first * hh::kDigestBytes;
    if (hh::VerifyBlocks(g.key, static_cast<uint32_t>(first), buf, spanLen, bb, entries) != -1) return false;
  }
  // Past the logical length the chunk reads as zeros (a file extended over a short chunk).
  const uint64_t dataOut = dataHi > lo ? dataHi - lo : 0;
  if (dataOut < outLen) std::memset(buf + skip + dataOut, 0, outLen - dataOut);
  fuse_reply_buf(req, reinterpret_cast<const char*>(buf + skip), outLen);
  return true;
}

}  // namespace fuse3
