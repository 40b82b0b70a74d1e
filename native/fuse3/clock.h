// The monotonic clock in nanoseconds, for deadlines inside the transport (spin windows in
// session.cc, grant lifetimes in read_grant.cc).
#pragma once
#include <cstdint>
#include <ctime>

namespace fuse3 {

inline int64_t MonotonicNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

}  // namespace fuse3
