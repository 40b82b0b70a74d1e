// One FUSE request copied out of libfuse's receive buffer (the pointers libfuse hands an op are
// valid only until the op returns; replies come later, from the JS thread), and the numeric layout
// in which a batch of them reaches JS. The layout is mirrored by fs/fuse/fuse3-abi.ts: change both.
#pragma once
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <node_api.h>

#include <fcntl.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "write_pool.h"

namespace fuse3 {

// Request kinds, in the order of fs/fuse/fuse3-abi.ts OP.
enum class Op : uint8_t {
  kLookup, kForget, kGetattr, kSetattr, kReadlink, kMknod, kMkdir, kUnlink, kRmdir, kSymlink,
  kRename, kLink, kOpen, kRead, kWrite, kFlush, kRelease, kFsync, kOpendir, kReaddir,
  kReaddirplus, kReleasedir, kFsyncdir, kStatfs, kSetxattr, kGetxattr, kListxattr, kRemovexattr,
  kCreate, kFallocate, kInterrupt, kLseek,
};

// Field indices of one request's row of numbers (a Float64Array per batch). Offsets, sizes and
// inode numbers stay below 2^53 in this file system; times travel as seconds + nanoseconds
// (time_split.h: exact also beyond 2^53 s). kFKillSuidgid: 1 when the kernel asked us to drop set-id
// bits with this write, setattr, open or create (kill_priv.h).
enum Field : int {
  kFOp, kFId, kFIno, kFUid, kFGid, kFPid, kFUmask, kFFh, kFOff, kFSize, kFFlags, kFMode, kFIno2,
  kFRdev, kFToSet, kFAtimeS, kFAtimeNs, kFMtimeS, kFMtimeNs, kFCtimeS, kFCtimeNs, kFAttrUid,
  kFAttrGid, kFKillSuidgid, kFieldCount,
};

// Requests that may change what a read of some file shows (read_grant.h: each one voids every read
// grant when it arrives and again when it is answered). Open counts only with O_TRUNC
// (ChangesData); flush, fsync and release store what writes buffered, and the store's commit of
// it voids the grants (fs/fuse/read-grants.ts).
inline bool MayChangeData(Op op) {
  switch (op) {
    case Op::kLookup: case Op::kForget: case Op::kGetattr: case Op::kReadlink: case Op::kOpen:
    case Op::kRead: case Op::kFlush: case Op::kRelease: case Op::kFsync: case Op::kOpendir:
    case Op::kReaddir: case Op::kReaddirplus: case Op::kReleasedir: case Op::kFsyncdir: case Op::kStatfs:
    case Op::kGetxattr: case Op::kListxattr: case Op::kInterrupt: case Op::kLseek:
      return false;
    default:
      return true;
  }
}

// MayChangeData with the open flags: an open with O_TRUNC truncates, as a setattr of the size does.
inline bool ChangesData(Op op, int openFlags) {
  return MayChangeData(op) || (op == Op::kOpen && (openFlags & O_TRUNC) != 0);
}

// No file handle was given (getattr/setattr without an open file).
constexpr double kNoFh = -1;

struct Request {
  Op op;
  uint64_t id = 0;
  fuse_req_t req = nullptr;
  double nums[kFieldCount] = {};
  std::string name;   // lookup/create/... name; setxattr/getxattr/removexattr attribute name
  std::string name2;  // rename/link new name; symlink target
  bool hasName = false;
  bool hasName2 = false;
  // The directory attribute table's revocation count at arrival (attr_table.h Stamp).
  uint64_t attrStamp = 0;
  // The clean-close marks' count of dirtying requests at arrival (clean_closes.h Stamp).
  uint64_t cleanStamp = 0;
  // The name table's revocation count at arrival (entry_table.h Stamp).
  uint64_t entryStamp = 0;
  // Write bytes (from pool, lent to JS until the answer: dataRef) or a setxattr value (malloc'd;
  // ownership moves to JS).
  char* data = nullptr;
  size_t dataBytes = 0;
  WritePool* pool = nullptr;
  napi_ref dataRef = nullptr;

  ~Request() {
    if (pool != nullptr) pool->Give(data, dataBytes);
    else std::free(data);
  }
};

}  // namespace fuse3
