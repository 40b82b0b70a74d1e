// allocHuge(bytes): a Buffer of `bytes` (a multiple of 2 MiB) in 2 MiB-aligned memory advised
// MADV_HUGEPAGE. releasePages(buffer): gives such a buffer's pages back to the kernel (the mapping
// stays; the next touch faults in zeroed pages), for pooled buffers left idle.
// trimMalloc(): malloc_trim(0), glibc's return of free pages inside its arenas to the kernel;
// mallocInUseBytes(): the bytes glibc's arenas have handed out and not got back (mallinfo2). Why: on this kind of VM every first touch of a 4 KiB page costs ~15 us (measured:
// 256 MiB touched page by page, 14-15 us/page with 4 KiB pages, 0.4 us/page as huge pages), and the
// mount's write-back slabs, staging and read scratch are touched page by page. Where the kernel
// gives no huge page the memory is ordinary; nothing depends on it. Freed when the Buffer is
// collected; the size is reported to V8 so collection keeps pace.
#include "huge_alloc.h"

#include <malloc.h>
#include <sys/mman.h>

#include <cstdint>

namespace mem {
namespace {

constexpr size_t kHugeBytes = size_t{2} << 20;
constexpr size_t kAllocBytesMax = size_t{1} << 32;

napi_value Fail(napi_env env, const char* message) {
  napi_throw_error(env, nullptr, message);
  return nullptr;
}

void Release(napi_env env, void* data, void* hint) {
  size_t bytes = static_cast<size_t>(reinterpret_cast<uintptr_t>(hint));
  int64_t ignored = 0;
  napi_adjust_external_memory(env, -static_cast<int64_t>(bytes), &ignored);
  munmap(data, bytes);  // straight back to the kernel: no malloc arena keeps it
}

// bytes of 2 MiB-aligned anonymous memory, or nullptr: map 2 MiB more, trim both ends.
void* MapAligned(size_t bytes) {
  void* raw = mmap(nullptr, bytes + kHugeBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  uintptr_t base = reinterpret_cast<uintptr_t>(raw);
  uintptr_t start = (base + kHugeBytes - 1) & ~(uintptr_t{kHugeBytes} - 1);
  if (start > base) munmap(raw, start - base);
  uintptr_t tail = start + bytes;
  uintptr_t end = base + bytes + kHugeBytes;
  if (end > tail) munmap(reinterpret_cast<void*>(tail), end - tail);
  return reinterpret_cast<void*>(start);
}

napi_value AllocHuge(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  int64_t requested = 0;
  if (argc != 1 || napi_get_value_int64(env, argv[0], &requested) != napi_ok) return Fail(env, "allocHuge: expected a byte count");
  if (requested <= 0 || static_cast<uint64_t>(requested) > kAllocBytesMax || static_cast<uint64_t>(requested) % kHugeBytes != 0) {
    return Fail(env, "allocHuge: byte count must be a positive multiple of 2 MiB, at most 4 GiB");
  }
  size_t bytes = static_cast<size_t>(requested);
  void* data = MapAligned(bytes);
  if (data == nullptr) return Fail(env, "allocHuge: out of memory");
#ifdef MADV_HUGEPAGE
  madvise(data, bytes, MADV_HUGEPAGE);  // advice only: failure leaves ordinary pages
#endif
  napi_value buffer;
  void* hint = reinterpret_cast<void*>(static_cast<uintptr_t>(bytes));
  if (napi_create_external_buffer(env, bytes, data, Release, hint, &buffer) != napi_ok) {
    munmap(data, bytes);
    return Fail(env, "allocHuge: could not wrap the memory in a Buffer");
  }
  int64_t ignored = 0;
  napi_adjust_external_memory(env, static_cast<int64_t>(bytes), &ignored);
  return buffer;
}

// releasePages(buffer) -> bool: MADV_DONTNEED over the buffer (an allocHuge buffer: whole 2 MiB
// pages, so no neighbour shares them). Its bytes read as zeros afterwards. False when the buffer is
// not page-aligned or the kernel refused.
napi_value ReleasePages(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  void* data = nullptr;
  size_t bytes = 0;
  if (argc != 1 || napi_get_buffer_info(env, argv[0], &data, &bytes) != napi_ok) return Fail(env, "releasePages: expected a Buffer");
  bool done = false;
  if (bytes > 0 && reinterpret_cast<uintptr_t>(data) % kHugeBytes == 0 && bytes % kHugeBytes == 0) {
    done = madvise(data, bytes, MADV_DONTNEED) == 0;
  }
  napi_value result;
  napi_get_boolean(env, done, &result);
  return result;
}

// trimMalloc() -> bool: glibc frees only the top of an arena by itself; pages wholly inside free
// chunks stay resident until malloc_trim. True when some memory went back.
napi_value TrimMalloc(napi_env env, napi_callback_info info) {
  napi_value result;
  napi_get_boolean(env, malloc_trim(0) == 1, &result);
  return result;
}

// mallocInUseBytes() -> number: mallinfo2's uordblks + hblkhd (arena chunks and mmapped chunks in
// use). It walks the arenas' bins without a system call: much cheaper than a trim.
napi_value MallocInUseBytes(napi_env env, napi_callback_info info) {
  struct mallinfo2 m = mallinfo2();
  napi_value result;
  napi_create_double(env, static_cast<double>(m.uordblks + m.hblkhd), &result);
  return result;
}

}  // namespace

napi_status RegisterExports(napi_env env, napi_value exports) {
  const napi_property_descriptor props[] = {
      {"allocHuge", nullptr, AllocHuge, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"releasePages", nullptr, ReleasePages, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"trimMalloc", nullptr, TrimMalloc, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"mallocInUseBytes", nullptr, MallocInUseBytes, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
  };
  return napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}

}  // namespace mem
