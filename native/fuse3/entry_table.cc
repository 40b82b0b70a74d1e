// Names answered in C (entry_table.h). Only the JS thread calls these: libfuse's ops run on it
// (session.h) and so do JS's puts and revocations.
#include "entry_table.h"

#include <algorithm>
#include <cstring>

#include "clock.h"

namespace fuse3 {
namespace {

constexpr double kNsPerS = 1e9;
// A name's inode in names_ while a change of it is under way in a complete directory: JS answers.
constexpr uint64_t kChanging = 0;

bool Dots(const std::string& name) { return name == "." || name == ".."; }

// Requests of an inode that change nothing of it a LOOKUP shows (a read's atime comes from JS).
bool KeepsEntry(Op op) {
  switch (op) {
    case Op::kLookup: case Op::kForget: case Op::kGetattr: case Op::kReadlink: case Op::kRead:
    case Op::kOpendir: case Op::kReaddir: case Op::kReaddirplus: case Op::kReleasedir: case Op::kStatfs:
    case Op::kGetxattr: case Op::kListxattr: case Op::kInterrupt: case Op::kLseek:
      return true;
    default:
      return false;
  }
}

}  // namespace

// "No such name", kept by the kernel as a negative dentry for missingTimeoutS_ (no lookup count).
bool EntryTable::Missing(fuse_req_t req) {
  if (!(missingTimeoutS_ > 0)) return false;
  fuse_entry_param e;
  std::memset(&e, 0, sizeof e);
  e.entry_timeout = missingTimeoutS_;
  fuse_reply_entry(req, &e);
  return true;
}

bool EntryTable::Serve(fuse_req_t req, uint64_t parent, const char* name) {
  if (!enabled_) return false;
  auto n = names_.find(Key{parent, name});
  if (n == names_.end()) return complete_.count(parent) != 0 && !Dots(name) && Missing(req);
  if (n->second == kChanging) return false;
  auto it = entries_.find(n->second);
  if (it == entries_.end()) return false;
  if (MonotonicNs() > it->second.expiresNs) {  // as old as the kernel's own cache may get: JS answers
    entries_.erase(it);
    return false;
  }
  const uint64_t ino = it->second.e.ino;
  // Counted only when the kernel took the entry, as JS counts its own (fs/fuse/fuse3-ops.ts entry).
  if (fuse_reply_entry(req, &it->second.e) == 0) answered_[ino]++;
  return true;
}

bool EntryTable::Put(uint64_t parent, const std::string& name, const fuse_entry_param& e) {
  return !Dots(name) && PutAttrs(e) && PutName(parent, name, e.ino);
}

bool EntryTable::PutName(uint64_t parent, const std::string& name, uint64_t ino) {
  if (!enabled_ || ino == kChanging || Dots(name)) return false;
  Room();
  names_[Key{parent, name}] = ino;
  return true;
}

// Past the bound the names start over, and with them every directory's completeness.
void EntryTable::Room() {
  if (names_.size() < kEntryNamesMax && complete_.size() < kEntryNamesMax) return;
  names_.clear();
  complete_.clear();
}

void EntryTable::NameGone(uint64_t parent, const std::string& name) {
  revocations_++;
  names_.erase(Key{parent, name});
}

bool EntryTable::DirMade(uint64_t parent, const std::string& name, const fuse_entry_param& e) {
  if (!S_ISDIR(e.attr.st_mode) || !Put(parent, name, e)) return false;
  complete_.insert(e.ino);
  return true;
}

bool EntryTable::PutAttrs(const fuse_entry_param& e) {
  if (!enabled_ || e.ino == 0 || !(e.attr_timeout > 0) || !(e.entry_timeout > 0)) return false;
  if (entries_.size() >= kEntryNamesMax) entries_.clear();
  const double lifeS = std::min(e.attr_timeout, e.entry_timeout);
  entries_[e.ino] = Entry{e, MonotonicNs() + static_cast<int64_t>(lifeS * kNsPerS)};
  return true;
}

void EntryTable::PutIfUnchanged(uint64_t stamp, uint64_t parent, const std::string& name,
                                const fuse_entry_param& e) {
  if (stamp == revocations_) Put(parent, name, e);
}

void EntryTable::Arrived(Op op, uint64_t ino) {
  if (!KeepsEntry(op)) Revoke(ino);
}

void EntryTable::Revoke(uint64_t ino) {
  revocations_++;
  entries_.erase(ino);
}

void EntryTable::RevokeName(uint64_t parent, const std::string& name) {
  revocations_++;
  if (complete_.count(parent) == 0) {
    names_.erase(Key{parent, name});
    return;
  }
  Room();
  if (complete_.count(parent) != 0) names_[Key{parent, name}] = kChanging;
}

void EntryTable::Clear() {
  revocations_++;
  names_.clear();
  entries_.clear();
  complete_.clear();
}

bool EntryTable::TakeLookups(std::vector<uint64_t>* pairs) {
  if (answered_.empty()) return false;
  pairs->reserve(answered_.size() * 2);
  for (const auto& [ino, n] : answered_) {
    pairs->push_back(ino);
    pairs->push_back(n);
  }
  answered_.clear();
  return true;
}

}  // namespace fuse3
