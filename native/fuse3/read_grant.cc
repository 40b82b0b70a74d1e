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
  if (s.payloadLenBytes != gcm::kHeaderBytes + s.logicalLenBytes + segments * gcm::kTagBytes) return "payload is not a v2 payload of the logical length";
  return nullptr;
}

// Replica: shard data is the payload (spec §6 last line). EC: every shard holds shard_data_len of the
// §6 mapping (ec_pieces.h), one entry per data shard.
const char* CheckShape(const GrantSpec& s) {
  if (s.ecK == 0) {
    if (s.shards.size() != 1) return "a replica grant holds one shard";
    return s.shardDataLenBytes == s.payloadLenBytes ? nullptr : "replica shard data is not the payload";
  }
  if (s.ecK > kGrantDataShardsMax || s.shards.size() != s.ecK) return "EC grant: data shard count out of range";
  if (s.ecBlockBytes == 0) return "EC grant: zero ec_block_size";
  if (s.shardDataLenBytes != EcShardDataLen(EcGeometry{s.ecK, s.ecBlockBytes, s.payloadLenBytes})) return "EC grant: shard_data_len is not the spec §6 length";
  return nullptr;
}

// The spec's geometry holds together (pair assertion with store/chunks/read-grant.ts): a bad grant
// is refused, never used.
const char* CheckSpec(const GrantSpec& s) {
  if (s.chunkSizeBytes == 0 || s.blockBytes == 0) return "zero chunk or block size";
  if (s.logicalLenBytes > s.chunkSizeBytes) return "logical length past the chunk size";
  if (const char* bad = CheckShape(s)) return bad;
  const uint64_t blocks = (s.shardDataLenBytes + s.blockBytes - 1) / s.blockBytes;
  if (blocks > 0xffffffffu) return "more blocks than a u32 block index";
  size_t granted = 0;
  for (const GrantShard& sh : s.shards) {
    if (sh.path.empty()) continue;
    granted++;
    if (sh.table.size() != blocks * hh::kDigestBytes) return "hash table size is not one entry per block";
    if (sh.table.size() > kGrantTableBytesMax) return "hash table too large";
  }
  if (granted == 0) return "no shard granted";
  if (s.segmentBytes > 0) return CheckCipher(s);
  return s.payloadLenBytes == s.logicalLenBytes ? nullptr : "a raw payload is not the content";
}

}  // namespace

void ReadGrants::Drop(std::unordered_map<uint64_t, Grant>::iterator it) {
  for (int fd : it->second.fds) {
    if (fd >= 0) {
      close(fd);
      descriptors_--;
    }
  }
  grants_.erase(it);
}

void ReadGrants::Clear() {
  for (auto& [k, g] : grants_) {
    for (int fd : g.fds) {
      if (fd >= 0) close(fd);
    }
  }
  grants_.clear();
  chunkSizes_.clear();
  descriptors_ = 0;
}

bool ReadGrants::SameShards(const GrantSpec& a, const GrantSpec& b) {
  if (a.shards.size() != b.shards.size()) return false;
  for (size_t i = 0; i < a.shards.size(); i++) {
    if (a.shards[i].path != b.shards[i].path) return false;
  }
  return true;
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
  size_t need = 0;
  for (const GrantShard& sh : spec.shards) need += sh.path.empty() ? 0 : 1;
  // Grants of older epochs are void: drop them all before a bound is reached.
  if (grants_.size() >= kGrantChunksMax || descriptors_ + need > kGrantDescriptorsMax) Clear();
  for (auto it = grants_.begin(); it != grants_.end();) {
    if (it->second.epoch == epoch) { ++it; continue; }
    auto next = std::next(it);
    Drop(it);
    it = next;
  }
  const uint64_t k = Key(spec.ino, spec.chunkIndex);
  auto old = grants_.find(k);
  if (old != grants_.end() && old->second.epoch == epoch && SameShards(old->second.spec, spec) &&
      old->second.spec.ino == spec.ino && old->second.spec.chunkIndex == spec.chunkIndex &&
      old->second.spec.fileSizeBytes == spec.fileSizeBytes && old->second.spec.logicalLenBytes == spec.logicalLenBytes) {
    // The same shards in the same epoch (a grant that lapsed, asked again): a new lifetime, same descriptors.
    old->second.expiresNs = MonotonicNs() + static_cast<int64_t>(spec.ttlMs) * 1000000LL;
    return true;
  }
  // Another shard set (an EC data shard JS has read since): a new grant; the descriptor bound again.
  if (old != grants_.end()) Drop(old);
  if (descriptors_ + need > kGrantDescriptorsMax) Clear();
  Grant g;
  g.fds.assign(spec.shards.size(), -1);
  g.keys.resize(spec.shards.size());
  for (size_t i = 0; i < spec.shards.size(); i++) {
    const GrantShard& sh = spec.shards[i];
    for (int w = 0; w < 4; w++) g.keys[i].words[w] = sh.keyWords[w];
    if (sh.path.empty()) continue;
    int fd = open(sh.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      *why = std::string("open ") + sh.path + ": " + std::strerror(errno);
      for (int o : g.fds) {
        if (o >= 0) close(o);
      }
      return false;
    }
    g.fds[i] = fd;
  }
  descriptors_ += need;
  g.epoch = epoch;
  g.expiresNs = MonotonicNs() + static_cast<int64_t>(spec.ttlMs) * 1000000LL;
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
  const Outcome o = Answer(req, g, offBytes - chunkStart, end - chunkStart);
  if (o == Outcome::kNotGranted) return false;  // a data shard JS has not read yet: JS reads, may re-grant
  if (o == Outcome::kFailed) {
    declined_++;
    Drop(it);  // JS reads it again, fails over and heals (DESIGN §6); the next JS read may re-grant
    return false;
  }
  served_++;
  servedBytes_ += end - offBytes;  // what the reply carried: the metrics' bytes read count it (cli/metrics.ts)
  return true;
}


// Shard i's data [lo, hi) (lo < hi <= shardDataLenBytes): the blocks under it read into scratch_
// and each verified against its entry (spec §4.1, §9). spanStart: shard data offset of scratch_[0].
bool ReadGrants::ReadVerified(const Grant& g, size_t i, uint64_t lo, uint64_t hi, uint64_t* spanStart) {
  const GrantSpec& s = g.spec;
  if (g.fds[i] < 0 || hi > s.shardDataLenBytes || lo >= hi) return false;
  const uint64_t bb = s.blockBytes;
  const uint64_t first = lo / bb;
  const uint64_t last = (hi - 1) / bb;
  const uint64_t start = first * bb;
  const uint64_t end = (last + 1) * bb < s.shardDataLenBytes ? (last + 1) * bb : s.shardDataLenBytes;
  const size_t spanLen = static_cast<size_t>(end - start);
  if (scratch_.size() < spanLen) scratch_.resize(spanLen);
  ssize_t got = pread(g.fds[i], scratch_.data(), spanLen, static_cast<off_t>(s.dataAtBytes + start));
  if (got != static_cast<ssize_t>(spanLen)) return false;  // a short shard: JS finds out why
  const uint8_t* entries = s.shards[i].table.data() + first * hh::kDigestBytes;
  if (hh::VerifyBlocks(g.keys[i], static_cast<uint32_t>(first), scratch_.data(), spanLen, bb, entries) != -1) return false;
  *spanStart = start;
  return true;
}

ReadGrants::Outcome ReadGrants::ReadStored(const Grant& g, uint64_t lo, uint64_t hi, const uint8_t** bytes) {
  if (g.spec.ecK > 0) return ReadStoredEc(g, lo, hi, bytes);
  uint64_t spanStart = 0;
  if (!ReadVerified(g, 0, lo, hi, &spanStart)) return Outcome::kFailed;
  *bytes = scratch_.data() + (lo - spanStart);
  return Outcome::kAnswered;
}

// EC payload [lo, hi) from its data shards (spec §6 fast path, as store/chunks/ec-chunk.ts
// readEcInto): each shard's pieces lie in one contiguous shard range, read and verified once, then
// its pieces copied into joined_. Every shard needed must be granted before anything is read.
ReadGrants::Outcome ReadGrants::ReadStoredEc(const Grant& g, uint64_t lo, uint64_t hi, const uint8_t** bytes) {
  const GrantSpec& s = g.spec;
  if (!EcPiecesOf(EcGeometry{s.ecK, s.ecBlockBytes, s.payloadLenBytes}, lo, hi, kGrantPiecesMax, &pieces_)) return Outcome::kFailed;
  uint64_t from[kGrantDataShardsMax];
  uint64_t to[kGrantDataShardsMax];
  bool used[kGrantDataShardsMax] = {};
  for (const EcPiece& p : pieces_) {
    const uint64_t e = p.shardOffsetBytes + p.lengthBytes;
    if (!used[p.shard]) {
      used[p.shard] = true;
      from[p.shard] = p.shardOffsetBytes;
      to[p.shard] = e;
    } else {
      from[p.shard] = p.shardOffsetBytes < from[p.shard] ? p.shardOffsetBytes : from[p.shard];
      to[p.shard] = e > to[p.shard] ? e : to[p.shard];
    }
  }
  for (size_t i = 0; i < s.ecK; i++) {
    if (used[i] && g.fds[i] < 0) return Outcome::kNotGranted;
  }
  if (joined_.size() < hi - lo) joined_.resize(hi - lo);
  for (size_t i = 0; i < s.ecK; i++) {
    if (!used[i]) continue;
    uint64_t spanStart = 0;
    if (!ReadVerified(g, i, from[i], to[i], &spanStart)) return Outcome::kFailed;
    for (const EcPiece& p : pieces_) {
      if (p.shard != i) continue;
      std::memcpy(joined_.data() + (p.payloadOffsetBytes - lo), scratch_.data() + (p.shardOffsetBytes - spanStart), p.lengthBytes);
    }
  }
  *bytes = joined_.data();
  return Outcome::kAnswered;
}

// Chunk range [lo, hi): the stored bytes under [lo, min(hi, logical)) read and verified, zeros
// after (a hole past the logical length), then answered. Nothing answered unless kAnswered.
ReadGrants::Outcome ReadGrants::Answer(fuse_req_t req, const Grant& g, uint64_t lo, uint64_t hi) {
  if (g.spec.segmentBytes > 0) return AnswerEncrypted(req, g, lo, hi);
  const uint64_t dataHi = hi < g.spec.logicalLenBytes ? hi : g.spec.logicalLenBytes;
  const uint64_t outLen = hi - lo;
  const uint8_t* data = nullptr;
  if (lo < dataHi) {
    const Outcome o = ReadStored(g, lo, dataHi, &data);
    if (o != Outcome::kAnswered) return o;
  }
  const uint64_t dataOut = dataHi > lo ? dataHi - lo : 0;
  if (dataOut < outLen) {
    // Past the logical length the chunk reads as zeros (a file extended over a short chunk).
    if (plain_.size() < outLen) plain_.resize(outLen);
    if (dataOut > 0) std::memmove(plain_.data(), data, dataOut);
    std::memset(plain_.data() + dataOut, 0, outLen - dataOut);
    data = plain_.data();
  }
  fuse_reply_buf(req, reinterpret_cast<const char*>(data), outLen);
  return Outcome::kAnswered;
}

// Answer of an encrypted chunk: the segments under [lo, min(hi, logical)) read and verified as
// stored bytes (hashes first, spec §9), then opened (each tag checked: gcm_segments.h) into plain_;
// the range copied out of them, zeros past the logical length.
ReadGrants::Outcome ReadGrants::AnswerEncrypted(fuse_req_t req, const Grant& g, uint64_t lo, uint64_t hi) {
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
    const uint8_t* stored = nullptr;
    const Outcome o = ReadStored(g, storedLo, storedHi, &stored);
    if (o != Outcome::kAnswered) return o;
    const size_t plainBytes = static_cast<size_t>(geo.PlainHi(last) - geo.PlainLo(first));
    skip = lo - geo.PlainLo(first);
    const size_t need = static_cast<size_t>(plainBytes > skip + outLen ? plainBytes : skip + outLen);
    if (plain_.size() < need) plain_.resize(need);
    if (gcm::OpenSegments(geo, first, last, stored, plain_.data()) != -1) return Outcome::kFailed;
  } else if (plain_.size() < outLen) {
    plain_.resize(outLen);
  }
  uint8_t* out = plain_.data() + skip;
  const uint64_t dataOut = dataHi > lo ? dataHi - lo : 0;
  if (dataOut < outLen) std::memset(out + dataOut, 0, outLen - dataOut);
  fuse_reply_buf(req, reinterpret_cast<const char*>(out), outLen);
  return Outcome::kAnswered;
}

}  // namespace fuse3
