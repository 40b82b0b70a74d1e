// A scratch row (reply_layout.h) as a struct stat: what a reply carries, and what JS puts in the
// directory attribute table (attr_table.h).
#pragma once
#include <sys/stat.h>

#include <cstring>

#include "reply_layout.h"
#include "time_split.h"

namespace fuse3 {

inline void FillStat(const double* a, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_ino = static_cast<ino_t>(a[kAIno]);
  st->st_mode = static_cast<mode_t>(a[kAMode]);
  st->st_nlink = static_cast<nlink_t>(a[kANlink]);
  st->st_uid = static_cast<uid_t>(a[kAUid]);
  st->st_gid = static_cast<gid_t>(a[kAGid]);
  st->st_rdev = static_cast<dev_t>(a[kARdev]);
  st->st_size = static_cast<off_t>(a[kASize]);
  st->st_blocks = static_cast<blkcnt_t>(a[kABlocks]);
  st->st_blksize = static_cast<blksize_t>(a[kABlksize]);
  st->st_atim = JoinTime(a[kAAtimeS], a[kAAtimeNs]);
  st->st_mtim = JoinTime(a[kAMtimeS], a[kAMtimeNs]);
  st->st_ctim = JoinTime(a[kACtimeS], a[kACtimeNs]);
}

}  // namespace fuse3
