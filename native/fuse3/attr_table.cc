// Directory attributes answered in C (attr_table.h). Only the JS thread calls these: libfuse's ops
// run on it (session.h) and so do JS's puts and revocations.
#include "attr_table.h"

#include "clock.h"

namespace fuse3 {
namespace {

constexpr double kNsPerS = 1e9;

}  // namespace

bool AttrTable::Serve(fuse_req_t req, uint64_t ino) {
  auto it = entries_.find(ino);
  if (it == entries_.end()) return false;
  if (MonotonicNs() > it->second.expiresNs) {  // as old as the kernel's own cache may get: JS answers
    entries_.erase(it);
    return false;
  }
  fuse_reply_attr(req, &it->second.st, it->second.attrTimeoutS);
  return true;
}

bool AttrTable::Put(const struct stat& st, double attrTimeoutS) {
  if (!enabled_ || !S_ISDIR(st.st_mode) || st.st_ino == 0 || !(attrTimeoutS > 0)) return false;
  if (entries_.size() >= kAttrEntriesMax && entries_.find(st.st_ino) == entries_.end()) entries_.clear();
  entries_[st.st_ino] = Entry{st, attrTimeoutS, MonotonicNs() + static_cast<int64_t>(attrTimeoutS * kNsPerS)};
  return true;
}

void AttrTable::Revoke(uint64_t ino) {
  revocations_++;
  entries_.erase(ino);
}

void AttrTable::Clear() {
  revocations_++;
  entries_.clear();
}

void AttrTable::FillIfUnchanged(uint64_t stamp, const struct stat& st, double attrTimeoutS) {
  if (stamp == revocations_) Put(st, attrTimeoutS);
}

}  // namespace fuse3
