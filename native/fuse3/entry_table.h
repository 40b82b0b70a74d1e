// Names answered in C (DESIGN §6, "Answers in C"): a LOOKUP of a name whose inode and attributes JS
// put here is answered on the JS thread that read it, without a JS round trip. The kernel asks a
// name again whenever it dropped its dentry (memory pressure, drop_caches, the entry timeout): one
// LOOKUP before each stat, open, chmod, rename or unlink of such a name, each a JS wake-up.
//
// Two maps: a name (parent, name) -> its inode, and an inode -> the entry a LOOKUP answers (its
// attributes). Kept current as the directory attribute table is (attr_table.h): revoke before
// reply. A name goes when any request that may change it arrives (unlink, rmdir, rename, link,
// create, mknod, mkdir, symlink: both names of a rename) and when JS's namespace changes it (JS
// revokes inside the operation: fs/fuse/entry-table.ts). An inode's entry goes when a request that
// may change its attributes or data arrives (anything but reads of it) and whenever the namespace
// changes its attributes (the attribute table's revocations reach both tables). JS puts only
// entries whose attributes no buffered write can change (no open file state), and a LOOKUP answer
// fills only if nothing was revoked between its arrival and its answer (Stamp). Every entry lives
// at most the timeouts the kernel was given with it. Revocations leave the lookup counts alone.
//
// Missing names: a directory made by this mount starts complete (every name in it is in the name
// map, or marked as changing), and a LOOKUP of a name it lacks is answered "no such name" here. In
// a complete directory a revoked name is marked changing (answered by JS) rather than dropped, until
// JS puts what the change left: the new inode, or the name's absence (NameGone).
//
// Lookup counts (fs/lookups.ts): each LOOKUP answered here gives the kernel one more reference to
// the inode. They are counted here until JS takes them (TakeLookups), which it does before it reads
// or lowers its own counts, so JS's count plus these is always the kernel's.
#pragma once
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "request.h"

namespace fuse3 {

// Names and inode entries held at once, each; past this a map starts over (each about 200 bytes).
constexpr size_t kEntryNamesMax = 65536;

class EntryTable {
 public:
  // Off until JS turns it on: only a mount whose every change JS sees may use it. missingTimeoutS:
  // how long the kernel may keep a "no such name" answered here.
  void Enable(double missingTimeoutS) {
    enabled_ = true;
    missingTimeoutS_ = missingTimeoutS;
  }
  // Answers a LOOKUP of (parent, name) from the table; false when it holds no live entry (JS answers).
  bool Serve(fuse_req_t req, uint64_t parent, const char* name);
  // (parent, name) is e's inode now, with e's attributes; refused (false) when the table is off or
  // e cannot be kept (no inode, no timeout, "." or "..").
  bool Put(uint64_t parent, const std::string& name, const fuse_entry_param& e);
  // (parent, name) is ino now; answered once ino's entry is put too (PutAttrs).
  bool PutName(uint64_t parent, const std::string& name, uint64_t ino);
  // (parent, name) names nothing now (after JS removed or moved it).
  void NameGone(uint64_t parent, const std::string& name);
  // Directory dir was just made by (parent, name) = e: empty, so complete.
  bool DirMade(uint64_t parent, const std::string& name, const fuse_entry_param& e);
  // e's attributes as they are now, for names already held (refused as Put refuses).
  bool PutAttrs(const fuse_entry_param& e);
  // At the answer of a LOOKUP that arrived at stamp.
  void PutIfUnchanged(uint64_t stamp, uint64_t parent, const std::string& name, const fuse_entry_param& e);
  // A request arrived (before JS sees it): revokes what it may change.
  void Arrived(Op op, uint64_t ino);
  void ArrivedName(uint64_t parent, const std::string& name) { RevokeName(parent, name); }
  void Revoke(uint64_t ino);
  void RevokeName(uint64_t parent, const std::string& name);
  void Clear();
  uint64_t Stamp() const { return revocations_; }
  // The lookups answered here since the last call, as (inode, count) pairs; false when none.
  bool TakeLookups(std::vector<uint64_t>* pairs);

 private:
  struct Key {
    uint64_t parent;
    std::string name;
    bool operator==(const Key& o) const { return parent == o.parent && name == o.name; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<std::string>()(k.name) ^ (k.parent * 0x9e3779b97f4a7c15ULL);
    }
  };
  struct Entry {
    fuse_entry_param e;
    int64_t expiresNs;
  };
  bool Missing(fuse_req_t req);
  void Room();

  std::unordered_map<Key, uint64_t, KeyHash> names_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::unordered_map<uint64_t, uint64_t> answered_;
  // Directories whose every name is in names_ (kChanging: ask JS).
  std::unordered_set<uint64_t> complete_;
  double missingTimeoutS_ = 0;
  bool enabled_ = false;
  uint64_t revocations_ = 0;
};

}  // namespace fuse3
