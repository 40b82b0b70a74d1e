// Read grants (read_grant.h): the verified read of one granted chunk range, answered here.
#include "read_grant.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "clock.h"

namespace fuse3 {
namespace {

// Cipher format v2 segment sizes a grant takes (src/chunk-segments.ts checks the header the same way).
constexpr uint64_t kSegmentBytesMin = 4096;
constexpr uint64_t kSegmentBytesMax = uint64_t{1} << 20;

// An encrypted grant's payload is exactly header || segments of logicalLenBytes plain bytes.
const char* CheckCipher(const GrantSpec& s) {
  if (s.segmentBytes < kSegmentBytesMin || s.segmentBytes > kSegmentBytesMax || s.segmentBytes % 4096 != 0) return "segment size out of range";
  const uint64_t segments = gcm::SegmentCountOf(s.logicalLenBytes, s.segmentBytes);
  if (s.shardDataLenBytes != gcm::kHeaderBytes + s.logicalLenBytes + segments * gcm::kTagBytes) return "shard data is not a v2 payload of the logical length";
  return nullptr;
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
  return s.segmentBytes > 0 ? CheckCipher(s) : nullptr;
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
  servedBytes_ += end - offBytes;  // what the reply carried: the metrics' bytes read count it (cli/metrics.ts)
  return true;
}

// Shard data [lo, hi) (lo < hi <= shardDataLenBytes): the blocks under it read into scratch_ and
// each verified against its entry (spec §4.1, §9). spanStart: shard data offset of scratch_[0].
bool ReadGrants::ReadVerified(const Grant& g, uint64_t lo, uint64_t hi, uint64_t* spanStart) {
  const GrantSpec& s = g.spec;
  const uint64_t bb = s.blockBytes;
  const uint64_t first = lo / bb;
  const uint64_t last = (hi - 1) / bb;
  const uint64_t start = first * bb;
  const uint64_t end = (last + 1) * bb < s.shardDataLenBytes ? (last + 1) * bb : s.shardDataLenBytes;
  const size_t spanLen = static_cast<size_t>(end - start);
  if (scratch_.size() < spanLen) scratch_.resize(spanLen);
  ssize_t got = pread(g.fd, scratch_.data(), spanLen, static_cast<off_t>(s.dataAtBytes + start));
  if (got != static_cast<ssize_t>(spanLen)) return false;
  const uint8_t* entries = s.table.data() + first * hh::kDigestBytes;
  if (hh::VerifyBlocks(g.key, static_cast<uint32_t>(first), scratch_.data(), spanLen, bb, entries) != -1) return false;
  *spanStart = start;
  return true;
}

// Chunk range [lo, hi): the stored blocks under [lo, min(hi, logical)) read and verified, zeros
// after (a hole past the logical length), then answered. False before anything was answered.
bool ReadGrants::Answer(fuse_req_t req, const Grant& g, uint64_t lo, uint64_t hi) {
  if (g.spec.segmentBytes > 0) return AnswerEncrypted(req, g, lo, hi);
  const uint64_t dataHi = hi < g.spec.logicalLenBytes ? hi : g.spec.logicalLenBytes;
  const uint64_t outLen = hi - lo;
  uint64_t skip = 0;
  if (lo < dataHi) {
    uint64_t spanStart = 0;
    if (!ReadVerified(g, lo, dataHi, &spanStart)) return false;
    skip = lo - spanStart;
  }
  if (scratch_.size() < skip + outLen) scratch_.resize(skip + outLen);
  uint8_t* out = scratch_.data() + skip;
  // Past the logical length the chunk reads as zeros (a file extended over a short chunk).
  const uint64_t dataOut = dataHi > lo ? dataHi - lo : 0;
  if (dataOut < outLen) std::memset(out + dataOut, 0, outLen - dataOut);
  fuse_reply_buf(req, reinterpret_cast<const char*>(out), outLen);
  return true;
}

// Answer of an encrypted chunk: the segments under [lo, min(hi, logical)) read and verified as
// stored bytes (hashes first, spec §9), then opened (each tag checked: gcm_segments.h) into plain_;
// the range copied out of them, zeros past the logical length.
bool ReadGrants::AnswerEncrypted(fuse_req_t req, const Grant& g, uint64_t lo, uint64_t hi) {
  const GrantSpec& s = g.spec;
  const uint64_t dataHi = hi < s.logicalLenBytes ? hi : s.logicalLenBytes;
  const uint64_t outLen = hi - lo;
  uint64_t skip = 0;
  if (lo < dataHi) {
    const gcm::Geometry geo{s.dataKey, s.nonceBase, s.logicalLenBytes, s.segmentBytes, gcm::SegmentCountOf(s.logicalLenBytes, s.segmentBytes)};
    const uint64_t first = lo / s.segmentBytes;
    const uint64_t last = (dataHi - 1) / s.segmentBytes;
    // Segment i's ciphertext starts after the header and i earlier segments with their tags.
    const uint64_t storedLo = gcm::kHeaderBytes + first * (s.segmentBytes + gcm::kTagBytes);
    const uint64_t storedHi = gcm::kHeaderBytes + last * (s.segmentBytes + gcm::kTagBytes) + (geo.PlainHi(last) - geo.PlainLo(last)) + gcm::kTagBytes;
    uint64_t spanStart = 0;
    if (!ReadVerified(g, storedLo, storedHi, &spanStart)) return false;
    const size_t plainBytes = static_cast<size_t>(geo.PlainHi(last) - geo.PlainLo(first));
    skip = lo - geo.PlainLo(first);
    const size_t need = static_cast<size_t>(plainBytes > skip + outLen ? plainBytes : skip + outLen);
    if (plain_.size() < need) plain_.resize(need);
    if (gcm::OpenSegments(geo, first, last, scratch_.data() + (storedLo - spanStart), plain_.data()) != -1) return false;
  } else if (plain_.size() < outLen) {
    plain_.resize(outLen);
  }
  uint8_t* out = plain_.data() + skip;
  const uint64_t dataOut = dataHi > lo ? dataHi - lo : 0;
  if (dataOut < outLen) std::memset(out + dataOut, 0, outLen - dataOut);
  fuse_reply_buf(req, reinterpret_cast<const char*>(out), outLen);
  return true;
}

}  // namespace fuse3
