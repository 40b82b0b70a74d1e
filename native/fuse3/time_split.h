// A time crosses to JS and back as two doubles: seconds (exact only to 2^53) and nanoseconds. For a
// time beyond 2^53 s (285 million years; xfstests generic/634 sets year 2147483647) the seconds the
// double lost ride in the nanoseconds field (at most 2^10 s, so that field stays exact), and each
// side rebuilds the exact time (fs/fuse/fuse3-ops.ts timeOf, fs/fuse/fuse3-reply.ts putTime).
#pragma once

#include <cstdint>
#include <ctime>

namespace fuse3 {

// The largest double below 2^63: seconds are never sent as 2^63, which int64 cannot hold.
constexpr double kSecondsMax = 9223372036854774784.0;
constexpr int64_t kNsPerS = 1000000000;

inline void SplitTime(const timespec& t, double* seconds, double* nanoseconds) {
  double s = static_cast<double>(t.tv_sec);
  if (s > kSecondsMax) s = kSecondsMax;
  const int64_t lost = static_cast<int64_t>(t.tv_sec) - static_cast<int64_t>(s);
  *seconds = s;
  *nanoseconds = static_cast<double>(lost * kNsPerS + static_cast<int64_t>(t.tv_nsec));
}

inline timespec JoinTime(double seconds, double nanoseconds) {
  const int64_t ns = static_cast<int64_t>(nanoseconds);
  int64_t carry = ns / kNsPerS;
  int64_t rest = ns % kNsPerS;
  if (rest < 0) { rest += kNsPerS; carry -= 1; }
  timespec t;
  t.tv_sec = static_cast<time_t>(static_cast<int64_t>(seconds > kSecondsMax ? kSecondsMax : seconds) + carry);
  t.tv_nsec = static_cast<long>(rest);
  return t;
}

}  // namespace fuse3
