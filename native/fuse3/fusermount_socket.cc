// See fusermount_socket.h.
#include "fusermount_socket.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace fuse3 {

std::vector<int> OpenFds() {
  std::vector<int> fds;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return fds;
  int own = dirfd(d);
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    int fd = atoi(e->d_name);
    if (fd != own) fds.push_back(fd);
  }
  closedir(d);
  std::sort(fds.begin(), fds.end());
  return fds;
}

namespace {

bool IsInheritableUnixStream(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  int domain = 0;
  int type = 0;
  socklen_t len = sizeof domain;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_UNIX) return false;
  len = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return false;
  int flags = fcntl(fd, F_GETFD);
  return flags >= 0 && (flags & FD_CLOEXEC) == 0;
}

}  // namespace

int TakeFusermountSocket(const std::vector<int>& before) {
  int found = -1;
  for (int fd : OpenFds()) {
    if (std::binary_search(before.begin(), before.end(), fd) || !IsInheritableUnixStream(fd)) continue;
    if (found != -1) return -1;
    found = fd;
  }
  if (found != -1) fcntl(found, F_SETFD, FD_CLOEXEC);
  return found;
}

int OpenOwnPidfd() {
  return static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
}

}  // namespace fuse3
