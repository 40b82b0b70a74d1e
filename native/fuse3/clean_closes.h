// Closes answered in C (DESIGN §6, "Answers in C"): close(2) of a writable descriptor sends FLUSH,
// which JS answers by reporting a failed background store and storing buffered bytes
// (fs/write-buffer.ts close). Two closes need neither and are answered here, without a JS round
// trip: that of a file just made by CREATE (nothing buffered), and that of a file whose last WRITE
// JS answered with nothing to report and its bytes bound for a close batch, which its RELEASE
// (one per file, the last handle) joins instead (WriteBack.settle).
//
// JS marks the inode when it answers the CREATE (open flag kOpenCleanBit), a WRITE (replyWrite's
// clean argument) or a SETATTR (replyAttr's: tar sets times, owner and mode by descriptor before close). The mark goes when any request that could give the file bytes or a pending error
// arrives (a write, setattr, fallocate or open of it), when a release or forget of it arrives, and
// when JS starts storing the open file's bytes (Forget: that store may fail, and this close must
// report it); a mark JS asks for is refused when such a request for that inode (or one sharing its
// slot) arrived between the request's arrival and its answer (Stamp): a per-inode check, since with
// several writers some other file's request arrives nearly always (bench-meta's 4-process write
// phase). This is the JS thread, which alone reads requests.
#pragma once
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <array>
#include <cstdint>
#include <unordered_set>

#include "request.h"

namespace fuse3 {

// Inodes marked at once; past this the set starts over (a lost mark only sends a FLUSH to JS).
constexpr size_t kCleanClosesMax = 4096;
// Slots of the last dirtying arrival, by inode modulo this (a shared slot only refuses a mark).
constexpr size_t kDirtySlots = 4096;
// The create reply's open flag (fs/fuse/fuse3-abi.ts OPEN_CLEAN): the new file's close needs no JS.
constexpr unsigned kOpenCleanBit = 1u << 16;

class CleanCloses {
 public:
  // Answers FLUSH of a marked inode (0: nothing to store or report); false otherwise (JS answers).
  bool Serve(fuse_req_t req, uint64_t ino);
  // A request for ino arrived (before JS sees it).
  void Arrived(Op op, uint64_t ino);
  uint64_t Stamp() const { return dirtyings_; }
  // At the answer of a CREATE, WRITE or SETATTR that arrived at stamp.
  void MarkIfUnchanged(uint64_t stamp, uint64_t ino);
  // JS began storing the file's bytes: its close goes to JS again.
  void Forget(uint64_t ino) { clean_.erase(ino); }

 private:
  std::unordered_set<uint64_t> clean_;
  uint64_t dirtyings_ = 0;
  // The count of dirtying arrivals when one last arrived for an inode of each slot.
  std::array<uint64_t, kDirtySlots> lastDirty_{};
};

}  // namespace fuse3
