// Closes of a file nothing was written to, answered in C (clean_closes.h).
#include "clean_closes.h"

namespace fuse3 {
namespace {

// Requests that may give a file bytes to store or an error to report (write-back state).
bool MayDirty(Op op) {
  return op == Op::kWrite || op == Op::kSetattr || op == Op::kFallocate || op == Op::kOpen;
}

}  // namespace

bool CleanCloses::Serve(fuse_req_t req, uint64_t ino) {
  if (clean_.find(ino) == clean_.end()) return false;
  fuse_reply_err(req, 0);
  return true;
}

void CleanCloses::Arrived(Op op, uint64_t ino) {
  if (MayDirty(op)) lastDirty_[ino % kDirtySlots] = ++dirtyings_;
  if (MayDirty(op) || op == Op::kRelease || op == Op::kForget) clean_.erase(ino);
}

void CleanCloses::MarkIfUnchanged(uint64_t stamp, uint64_t ino) {
  if (lastDirty_[ino % kDirtySlots] > stamp || ino == 0) return;
  if (clean_.size() >= kCleanClosesMax) clean_.clear();
  clean_.insert(ino);
}

}  // namespace fuse3
