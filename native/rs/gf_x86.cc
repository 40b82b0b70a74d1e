// x86 kernels for out[r] = XOR_c coef[r][c] * in[c] over GF(2^8)/0x11D (DESIGN.md §3).
// Split-table multiply: a*x = lo[x & 15] ^ hi[x >> 4], two pshufb lookups per
// byte vector. Rows are done in groups of up to 4 so each input vector is loaded
// once per group and the accumulators stay in registers. Compiled for baseline
// x86-64; each kernel enables its ISA with a target attribute and is only called
// after runtime CPU detection (gf_kernels.cc).
#include "gf_x86.h"

#if defined(GF_HAVE_X86)
#include <immintrin.h>

#include "gf_tables.h"

namespace gf {
namespace {

constexpr int kGroupRowsMax = 4;
// Inputs per call are k <= 256 shards (DESIGN.md §3 limits k+m to 256).
constexpr int kColsMax = 256;

// Per-group table pointers so the inner loop does no index arithmetic.
struct GroupTables {
  const uint8_t* lo[kGroupRowsMax][kColsMax];
  const uint8_t* hi[kGroupRowsMax][kColsMax];
  uint64_t affine[kGroupRowsMax][kColsMax];
};

void FillGroup(GroupTables* g, const uint8_t* coef, int rowsInGroup, int cols) {
  const Tables& t = GetTables();
  for (int r = 0; r < rowsInGroup; r++) {
    for (int c = 0; c < cols; c++) {
      uint8_t a = coef[r * cols + c];
      g->lo[r][c] = t.nibbleLo[a];
      g->hi[r][c] = t.nibbleHi[a];
      g->affine[r][c] = t.affine[a];
    }
  }
}

template <int R>
__attribute__((target("ssse3"))) size_t GroupSsse3(const GroupTables& g, int cols, const uint8_t* const* in,
                                                   uint8_t* const* out, size_t len) {
  const __m128i mask = _mm_set1_epi8(0x0f);
  size_t pos = 0;
  for (; pos + 32 <= len; pos += 32) {
    __m128i acc0[R], acc1[R];
    for (int r = 0; r < R; r++) acc0[r] = acc1[r] = _mm_setzero_si128();
    for (int c = 0; c < cols; c++) {
      __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in[c] + pos));
      __m128i x1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in[c] + pos + 16));
      __m128i l0 = _mm_and_si128(x0, mask), h0 = _mm_and_si128(_mm_srli_epi64(x0, 4), mask);
      __m128i l1 = _mm_and_si128(x1, mask), h1 = _mm_and_si128(_mm_srli_epi64(x1, 4), mask);
      for (int r = 0; r < R; r++) {
        __m128i tl = _mm_load_si128(reinterpret_cast<const __m128i*>(g.lo[r][c]));
        __m128i th = _mm_load_si128(reinterpret_cast<const __m128i*>(g.hi[r][c]));
        acc0[r] = _mm_xor_si128(acc0[r], _mm_xor_si128(_mm_shuffle_epi8(tl, l0), _mm_shuffle_epi8(th, h0)));
        acc1[r] = _mm_xor_si128(acc1[r], _mm_xor_si128(_mm_shuffle_epi8(tl, l1), _mm_shuffle_epi8(th, h1)));
      }
    }
    for (int r = 0; r < R; r++) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out[r] + pos), acc0[r]);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out[r] + pos + 16), acc1[r]);
    }
  }
  return pos;
}

template <int R>
__attribute__((target("avx2"))) size_t GroupAvx2(const GroupTables& g, int cols, const uint8_t* const* in,
                                                 uint8_t* const* out, size_t len) {
  const __m256i mask = _mm256_set1_epi8(0x0f);
  size_t pos = 0;
  for (; pos + 64 <= len; pos += 64) {
    __m256i acc0[R], acc1[R];
    for (int r = 0; r < R; r++) acc0[r] = acc1[r] = _mm256_setzero_si256();
    for (int c = 0; c < cols; c++) {
      __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in[c] + pos));
      __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in[c] + pos + 32));
      __m256i l0 = _mm256_and_si256(x0, mask), h0 = _mm256_and_si256(_mm256_srli_epi64(x0, 4), mask);
      __m256i l1 = _mm256_and_si256(x1, mask), h1 = _mm256_and_si256(_mm256_srli_epi64(x1, 4), mask);
      for (int r = 0; r < R; r++) {
        __m256i tl = _mm256_load_si256(reinterpret_cast<const __m256i*>(g.lo[r][c]));
        __m256i th = _mm256_load_si256(reinterpret_cast<const __m256i*>(g.hi[r][c]));
        acc0[r] = _mm256_xor_si256(acc0[r], _mm256_xor_si256(_mm256_shuffle_epi8(tl, l0), _mm256_shuffle_epi8(th, h0)));
        acc1[r] = _mm256_xor_si256(acc1[r], _mm256_xor_si256(_mm256_shuffle_epi8(tl, l1), _mm256_shuffle_epi8(th, h1)));
      }
    }
    for (int r = 0; r < R; r++) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[r] + pos), acc0[r]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[r] + pos + 32), acc1[r]);
    }
  }
  return pos;
}

template <int R>
__attribute__((target("avx512f,avx512bw"))) size_t GroupAvx512(const GroupTables& g, int cols,
                                                                const uint8_t* const* in, uint8_t* const* out,
                                                                size_t len) {
  const __m512i mask = _mm512_set1_epi8(0x0f);
  size_t pos = 0;
  for (; pos + 128 <= len; pos += 128) {
    __m512i acc0[R], acc1[R];
    for (int r = 0; r < R; r++) acc0[r] = acc1[r] = _mm512_setzero_si512();
    for (int c = 0; c < cols; c++) {
      __m512i x0 = _mm512_loadu_si512(in[c] + pos);
      __m512i x1 = _mm512_loadu_si512(in[c] + pos + 64);
      __m512i l0 = _mm512_and_si512(x0, mask), h0 = _mm512_and_si512(_mm512_srli_epi64(x0, 4), mask);
      __m512i l1 = _mm512_and_si512(x1, mask), h1 = _mm512_and_si512(_mm512_srli_epi64(x1, 4), mask);
      for (int r = 0; r < R; r++) {
        __m512i tl = _mm512_load_si512(g.lo[r][c]);
        __m512i th = _mm512_load_si512(g.hi[r][c]);
        // 0x96 = a ^ b ^ c in one ternary-logic op.
        acc0[r] = _mm512_ternarylogic_epi64(acc0[r], _mm512_shuffle_epi8(tl, l0), _mm512_shuffle_epi8(th, h0), 0x96);
        acc1[r] = _mm512_ternarylogic_epi64(acc1[r], _mm512_shuffle_epi8(tl, l1), _mm512_shuffle_epi8(th, h1), 0x96);
      }
    }
    for (int r = 0; r < R; r++) {
      _mm512_storeu_si512(out[r] + pos, acc0[r]);
      _mm512_storeu_si512(out[r] + pos + 64, acc1[r]);
    }
  }
  return pos;
}

// GFNI: one GF2P8AFFINEQB multiplies 64 bytes by a constant (any polynomial).
template <int R>
__attribute__((target("avx512f,avx512bw,gfni"))) size_t GroupGfni(const GroupTables& g, int cols,
                                                                   const uint8_t* const* in, uint8_t* const* out,
                                                                   size_t len) {
  size_t pos = 0;
  for (; pos + 128 <= len; pos += 128) {
    __m512i acc0[R], acc1[R];
    for (int r = 0; r < R; r++) acc0[r] = acc1[r] = _mm512_setzero_si512();
    for (int c = 0; c < cols; c++) {
      __m512i x0 = _mm512_loadu_si512(in[c] + pos);
      __m512i x1 = _mm512_loadu_si512(in[c] + pos + 64);
      for (int r = 0; r < R; r++) {
        __m512i a = _mm512_set1_epi64(static_cast<long long>(g.affine[r][c]));
        acc0[r] = _mm512_xor_si512(acc0[r], _mm512_gf2p8affine_epi64_epi8(x0, a, 0));
        acc1[r] = _mm512_xor_si512(acc1[r], _mm512_gf2p8affine_epi64_epi8(x1, a, 0));
      }
    }
    for (int r = 0; r < R; r++) {
      _mm512_storeu_si512(out[r] + pos, acc0[r]);
      _mm512_storeu_si512(out[r] + pos + 64, acc1[r]);
    }
  }
  return pos;
}

using GroupFn = size_t (*)(const GroupTables&, int, const uint8_t* const*, uint8_t* const*, size_t);

// Runs the kernel over row groups of up to 4; returns bytes done (same for all groups).
size_t RunGroups(const GroupFn fns[kGroupRowsMax], const uint8_t* coef, int rows, int cols,
                 const uint8_t* const* in, uint8_t* const* out, size_t len) {
  static thread_local GroupTables tables;
  size_t done = 0;
  for (int row = 0; row < rows; row += kGroupRowsMax) {
    int rowsInGroup = rows - row < kGroupRowsMax ? rows - row : kGroupRowsMax;
    FillGroup(&tables, coef + row * cols, rowsInGroup, cols);
    done = fns[rowsInGroup - 1](tables, cols, in, out + row, len);
  }
  return done;
}

}  // namespace

size_t MulMatrixSsse3(const uint8_t* coef, int rows, int cols, const uint8_t* const* in, uint8_t* const* out,
                      size_t len) {
  static const GroupFn fns[] = {GroupSsse3<1>, GroupSsse3<2>, GroupSsse3<3>, GroupSsse3<4>};
  return RunGroups(fns, coef, rows, cols, in, out, len);
}

size_t MulMatrixAvx2(const uint8_t* coef, int rows, int cols, const uint8_t* const* in, uint8_t* const* out,
                     size_t len) {
  static const GroupFn fns[] = {GroupAvx2<1>, GroupAvx2<2>, GroupAvx2<3>, GroupAvx2<4>};
  return RunGroups(fns, coef, rows, cols, in, out, len);
}

size_t MulMatrixAvx512(const uint8_t* coef, int rows, int cols, const uint8_t* const* in, uint8_t* const* out,
                       size_t len) {
  static const GroupFn fns[] = {GroupAvx512<1>, GroupAvx512<2>, GroupAvx512<3>, GroupAvx512<4>};
  return RunGroups(fns, coef, rows, cols, in, out, len);
}

size_t MulMatrixGfni(const uint8_t* coef, int rows, int cols, const uint8_t* const* in, uint8_t* const* out,
                     size_t len) {
  static const GroupFn fns[] = {GroupGfni<1>, GroupGfni<2>, GroupGfni<3>, GroupGfni<4>};
  return RunGroups(fns, coef, rows, cols, in, out, len);
}

}  // namespace gf
#endif
