// Directory attributes answered in C (DESIGN §6, "Answers in C"): a GETATTR of a directory whose
// attributes JS put here is answered on the JS thread that read it, without a JS round trip. The
// kernel drops a directory's attributes after every create, unlink, rename, mkdir and rmdir in it
// and, under default_permissions, asks them again before the next permission check: one GETATTR
// per such operation, each a JS wake-up before this table.
//
// Kept current by JS, which alone changes what a stat shows, on this same thread: every change of
// an inode's attributes revokes its entry synchronously when the namespace (or a pending atime)
// changes, before any reply (fs/fuse/attr-table.ts), and the operations that change a directory put
// its new attributes before they answer. A GETATTR answered by JS fills the entry only when nothing
// was revoked between its arrival and its answer (Stamp/FillIfUnchanged), so an answer computed
// before a change never lands after it. Directories only: a regular file's attributes also follow
// its buffered writes, which the namespace does not see. An entry lives at most the attribute
// timeout the kernel was given with it, so a change missed by every revocation can show no longer
// than the kernel's own cache would have shown it.
#pragma once
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <cstdint>
#include <unordered_map>

namespace fuse3 {

// Directories held at once; past this the table starts over (each entry about 200 bytes).
constexpr size_t kAttrEntriesMax = 4096;

class AttrTable {
 public:
  // Off until JS turns it on: only a mount whose every attribute change JS sees may use it.
  void Enable() { enabled_ = true; }
  // Answers a GETATTR of ino from the table; false when it holds no live entry (JS answers).
  bool Serve(fuse_req_t req, uint64_t ino);
  // A directory's attributes as JS knows them now; anything else is refused (false).
  bool Put(const struct stat& st, double attrTimeoutS);
  void Revoke(uint64_t ino);
  void Clear();
  // What a request records at its arrival: its answer may fill the table only if this is unchanged.
  uint64_t Stamp() const { return revocations_; }
  void FillIfUnchanged(uint64_t stamp, const struct stat& st, double attrTimeoutS);

 private:
  struct Entry {
    struct stat st;
    double attrTimeoutS;
    int64_t expiresNs;
  };
  std::unordered_map<uint64_t, Entry> entries_;
  bool enabled_ = false;
  uint64_t revocations_ = 0;
};

}  // namespace fuse3
