// Finding the mount's end of fusermount3's auto_unmount socket (libfuse keeps it open and never
// names it). fusermount3 unmounts a dead mount once this socket closes, but only if open() of the
// mount point then fails with ENOTCONN: the socket must close after /dev/fuse (see
// fs/fuse/unmount-guard.ts for why that order needs a second process).
#pragma once
#include <vector>

namespace fuse3 {

// The descriptors open in this process now, ascending.
std::vector<int> OpenFds();

// The descriptor fuse_session_mount opened for fusermount3 since `before` was taken: the one new
// AF_UNIX stream socket without FD_CLOEXEC (libfuse makes it so; libuv and Node open every
// descriptor close-on-exec). Marked close-on-exec here, so that no child of the mount (mount(8)
// for the remount, fusermount3 -u) keeps it open. -1 when there is not exactly one.
int TakeFusermountSocket(const std::vector<int>& before);

// A pidfd of this process (close-on-exec), or -1 with errno.
int OpenOwnPidfd();

}  // namespace fuse3
