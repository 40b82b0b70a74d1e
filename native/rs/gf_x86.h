// x86 SIMD kernels (SSSE3, AVX2, AVX-512BW split-table pshufb; GFNI affine).
// Each handles whole blocks of its width and returns the bytes it processed;
// the caller finishes the tail with the scalar kernel.
#pragma once
#include <cstddef>
#include <cstdint>

namespace gf {

#if defined(__x86_64__) || defined(__i386__)
#define GF_HAVE_X86 1
size_t MulMatrixSsse3(const uint8_t* coef, int rows, int cols, const uint8_t* const* in, uint8_t* const* out,
                      size_t len);
size_t MulMatrixAvx2(const uint8_t* coef, int rows, int cols, const uint8_t* const* in, uint8_t* const* out,
                     size_t len);
size_t MulMatrixAvx512(const uint8_t* coef, int rows, int cols, const uint8_t* const* in, uint8_t* const* out,
                       size_t len);
size_t MulMatrixGfni(const uint8_t* coef, int rows, int cols, const uint8_t* const* in, uint8_t* const* out,
                     size_t len);
#endif

}  // namespace gf
