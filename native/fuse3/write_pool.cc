#include "write_pool.h"

#include <cstdlib>

namespace fuse3 {

WritePool::~WritePool() {
  for (char* b : free_) std::free(b);
}

char* WritePool::Take(size_t bytes) {
  if (bytes > kBufferBytes) return static_cast<char*>(std::malloc(bytes));
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!free_.empty()) {
      char* b = free_.back();
      free_.pop_back();
      return b;
    }
  }
  return static_cast<char*>(std::malloc(kBufferBytes));
}

void WritePool::Give(char* buf, size_t bytes) {
  if (buf == nullptr) return;
  if (bytes <= kBufferBytes) {
    std::lock_guard<std::mutex> lk(mu_);
    if (free_.size() < kKeptMax) {
      free_.push_back(buf);
      return;
    }
  }
  std::free(buf);
}

}  // namespace fuse3
