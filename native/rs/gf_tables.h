// Lookup tables for GF(2^8) with primitive polynomial 0x11D (DESIGN.md §3).
#pragma once
#include <cstdint>

namespace gf {

struct Tables {
  // mul[a][b] = a*b: the scalar path and the tails of the SIMD paths.
  uint8_t mul[256][256];
  // Split (nibble) tables for pshufb: for coefficient a, lo[x] = a*x and
  // hi[x] = a*(x<<4), x in 0..15, each repeated 4 times to fill a 512-bit lane
  // set, so SSSE3/AVX2/AVX-512 all load their width from the same bytes.
  alignas(64) uint8_t nibbleLo[256][64];
  alignas(64) uint8_t nibbleHi[256][64];
  // 8x8 bit matrices for GF2P8AFFINEQB: multiplying by a is linear over GF(2).
  uint64_t affine[256];
};

const Tables& GetTables();

}  // namespace gf
