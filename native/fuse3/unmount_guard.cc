// chunkfs_unmount_guard: started by a mount (fs/fuse/unmount-guard.ts) with descriptor 3 a pidfd of
// the mount process and 4 the mount's end of fusermount3's auto_unmount socket. It holds the socket
// until the mount process has wholly exited, then exits, which closes it. Why: fusermount3 unmounts a
// dead mount only if open() of the mount point fails with ENOTCONN, which needs the connection
// aborted (the dead process's /dev/fuse released) before the socket closes. A process killed with
// SIGKILL releases its descriptors one by one, the socket before /dev/fuse here, and under load
// fusermount3 ran in between: its open() reached the dying connection and failed ECONNABORTED, so
// it left the mount (traced: 1 of 10 loaded kill -9 runs). A pidfd polls readable only once every
// thread of the process has exited, after all its descriptors are released.
#include <linux/close_range.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace {

constexpr int kPidfd = 3;
constexpr int kSocket = 4;

}  // namespace

int main() {
  // Nothing else the mount left inheritable (its parent's pipes) stays open for this one's lifetime.
  syscall(SYS_close_range, kSocket + 1, ~0U, 0);
  pollfd p{kPidfd, POLLIN, 0};
  while (poll(&p, 1, -1) < 0 && errno == EINTR) {
  }
  return 0;
}
