// GF(2^8) (poly 0x11D) matrix-times-shards kernels for Reed-Solomon
// "rs-vandermonde" (DESIGN.md §3): out[r] = XOR over c of coef[r][c] * in[c].
#pragma once
#include <cstddef>
#include <cstdint>

namespace gf {

enum Level { kScalar = 0, kSsse3 = 1, kAvx2 = 2, kAvx512 = 3, kGfni = 4, kLevelCount = 5 };

const char* LevelName(Level level);
// The best level this CPU (and OS) supports; scalar on non-x86.
Level DetectLevel();
// The level kernels run at now; starts at DetectLevel().
Level ActiveLevel();
// Clamp to what the CPU supports and make it active (tests exercise every path).
Level SetLevel(Level wanted);

// coef is rows*cols, row-major. in[c] and out[r] hold at least len bytes, and no
// output overlaps an input or another output. Outputs are overwritten.
void MulMatrix(const uint8_t* coef, int rows, int cols, const uint8_t* const* in, uint8_t* const* out,
               size_t len);

// Exposed for the scalar tails of the SIMD kernels.
void MulMatrixScalar(const uint8_t* coef, int rows, int cols, const uint8_t* const* in, uint8_t* const* out,
                     size_t begin, size_t end);

}  // namespace gf
