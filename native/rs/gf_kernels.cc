// Scalar kernel, CPU detection and dispatch for the GF(2^8) matrix kernels
// (DESIGN.md §3, Reed-Solomon "rs-vandermonde").
#include "gf_kernels.h"

#include <cstring>

#include "gf_tables.h"
#include "gf_x86.h"

namespace gf {
namespace {

bool Supported(Level level) {
#if defined(GF_HAVE_X86)
  __builtin_cpu_init();
  switch (level) {
    case kScalar:
      return true;
    case kSsse3:
      return __builtin_cpu_supports("ssse3");
    case kAvx2:
      return __builtin_cpu_supports("avx2");
    case kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    case kGfni:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("gfni");
    default:
      return false;
  }
#else
  return level == kScalar;
#endif
}

Level g_active = DetectLevel();

}  // namespace

const char* LevelName(Level level) {
  static const char* const names[kLevelCount] = {"scalar", "ssse3", "avx2", "avx512", "gfni"};
  return level >= 0 && level < kLevelCount ? names[level] : "unknown";
}

Level DetectLevel() {
  for (int level = kLevelCount - 1; level > kScalar; level--) {
    if (Supported(static_cast<Level>(level))) return static_cast<Level>(level);
  }
  return kScalar;
}

Level ActiveLevel() { return g_active; }

Level SetLevel(Level wanted) {
  Level level = wanted;
  while (level > kScalar && !Supported(level)) level = static_cast<Level>(level - 1);
  g_active = level;
  return level;
}

void MulMatrixScalar(const uint8_t* coef, int rows, int cols, const uint8_t* const* in, uint8_t* const* out,
                     size_t begin, size_t end) {
  const Tables& t = GetTables();
  for (int r = 0; r < rows; r++) {
    uint8_t* dst = out[r];
    std::memset(dst + begin, 0, end - begin);
    for (int c = 0; c < cols; c++) {
      const uint8_t* row = t.mul[coef[r * cols + c]];
      const uint8_t* src = in[c];
      for (size_t i = begin; i < end; i++) dst[i] ^= row[src[i]];
    }
  }
}

void MulMatrix(const uint8_t* coef, int rows, int cols, const uint8_t* const* in, uint8_t* const* out,
               size_t len) {
  size_t done = 0;
#if defined(GF_HAVE_X86)
  switch (g_active) {
    case kGfni:
      done = MulMatrixGfni(coef, rows, cols, in, out, len);
      break;
    case kAvx512:
      done = MulMatrixAvx512(coef, rows, cols, in, out, len);
      break;
    case kAvx2:
      done = MulMatrixAvx2(coef, rows, cols, in, out, len);
      break;
    case kSsse3:
      done = MulMatrixSsse3(coef, rows, cols, in, out, len);
      break;
    default:
      break;
  }
#endif
  if (done < len) MulMatrixScalar(coef, rows, cols, in, out, done, len);
}

}  // namespace gf
