// Builds the GF(2^8) 0x11D tables once at load (DESIGN.md §3).
#include "gf_tables.h"

namespace gf {
namespace {

uint8_t MulSlow(uint8_t a, uint8_t b) {
  // Shift-and-add ("Russian peasant") multiply, reducing by 0x11D.
  unsigned product = 0;
  unsigned x = a;
  for (int bit = 0; bit < 8; bit++) {
    if (b & (1u << bit)) product ^= x;
    x <<= 1;
    if (x & 0x100) x ^= 0x11D;
  }
  return static_cast<uint8_t>(product);
}

// GF2P8AFFINEQB computes result bit i = parity(matrix.byte[7-i] & x), so
// byte[7-i] holds, in bit j, bit i of a*(1<<j).
uint64_t AffineFor(uint8_t a) {
  uint64_t matrix = 0;
  for (int i = 0; i < 8; i++) {
    uint8_t row = 0;
    for (int j = 0; j < 8; j++) {
      if (MulSlow(a, static_cast<uint8_t>(1u << j)) & (1u << i)) row |= static_cast<uint8_t>(1u << j);
    }
    matrix |= static_cast<uint64_t>(row) << (8 * (7 - i));
  }
  return matrix;
}

Tables* Build() {
  static Tables tables;
  for (int a = 0; a < 256; a++) {
    for (int b = 0; b < 256; b++) tables.mul[a][b] = MulSlow(static_cast<uint8_t>(a), static_cast<uint8_t>(b));
    for (int x = 0; x < 64; x++) {
      tables.nibbleLo[a][x] = tables.mul[a][x & 15];
      tables.nibbleHi[a][x] = tables.mul[a][(x & 15) << 4];
    }
    tables.affine[a] = AffineFor(static_cast<uint8_t>(a));
  }
  return &tables;
}

}  // namespace

const Tables& GetTables() {
  static const Tables* tables = Build();
  return *tables;
}

}  // namespace gf
