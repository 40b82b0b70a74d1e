// The reply scratch: a Float64Array JS fills before a reply that carries attributes (entry, attr,
// create, statfs, directory listings), read here without a JS object per reply. One row per inode;
// a directory listing uses one row per entry. Mirrored by fs/fuse/fuse3-abi.ts ATTR.
#pragma once

namespace fuse3 {

enum AttrField : int {
  kAIno, kAGeneration, kAMode, kANlink, kAUid, kAGid, kARdev, kASize, kABlocks, kABlksize,
  kAAtimeS, kAAtimeNs, kAMtimeS, kAMtimeNs, kACtimeS, kACtimeNs, kAAttrTimeout, kAEntryTimeout,
  kADirOff, kAttrFieldCount,
};

// Entries one directory reply may carry (the scratch holds this many rows). A reply is at most the
// kernel's readdir size (a few pages), and an entry takes at least 24 bytes (plain) or 152 (plus).
constexpr int kDirEntriesPerReplyMax = 512;

// statfs reuses row 0: these fields replace the attribute ones.
enum StatfsField : int {
  kSBsize, kSFrsize, kSBlocks, kSBfree, kSBavail, kSFiles, kSFfree, kSFavail, kSFsid, kSFlag, kSNamemax,
};

}  // namespace fuse3
