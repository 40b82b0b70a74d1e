// Reused buffers for copied write data. A fresh 1 MiB malloc per write is a fresh mmap, and every
// first touch of a 4 KiB page costs ~15 us on this VM (docs/benchmarks.md: huge pages): 256 faults per 1 MiB
// write capped sequential writes near 80 MiB/s (bench-fio, seq 1 MiB write, cfs3-r3). A buffer goes
// back to the pool when its request is answered; JS's view of it is detached first (replies.cc).
#pragma once
#include <cstddef>
#include <mutex>
#include <vector>

namespace fuse3 {

class WritePool {
 public:
  // A write is at most max_write (1 MiB); larger buffers are never needed.
  static constexpr size_t kBufferBytes = size_t{1} << 20;
  // Kept for reuse: max_background (64) writes plus a few from writers' own threads.
  static constexpr size_t kKeptMax = 80;

  ~WritePool();
  // A buffer of at least bytes (pooled when bytes <= kBufferBytes), or nullptr when out of memory.
  char* Take(size_t bytes);
  void Give(char* buf, size_t bytes);

 private:
  std::mutex mu_;
  std::vector<char*> free_;
};

}  // namespace fuse3
