// Portable HighwayHash-256 kernel and the helpers both kernels share. Written
// from the algorithm's public description (Alakuijala, Cox, Wassenberg,
// "Fast keyed hash/pseudo-random function using SIMD multiply and permute"):
// state v0, v1, mul0, mul1 of four u64 lanes; 32-byte packets; a length-dependent
// tail packet; 10 permute-and-update rounds and a modular reduction for 256 bits.
#include <cstring>

#include "highwayhash.h"

namespace hh {

const uint64_t kInitMul0[4] = {0xdbe6d5d5fe4cce2full, 0xa4093822299f31d0ull, 0x13198a2e03707344ull,
                               0x243f6a8885a308d3ull};
const uint64_t kInitMul1[4] = {0x3bd39e10cb0ef593ull, 0xc0acf169b5f18a8cull, 0xbe5466cf34e90c6cull,
                               0x452821e638d01377ull};

namespace {

struct State {
  uint64_t v0[4], v1[4], mul0[4], mul1[4];
};

// Little-endian load independent of host byte order (compiles to one mov on x86).
inline uint64_t Load64(const uint8_t* p) {
  uint64_t x = 0;
  for (int i = 7; i >= 0; i--) x = (x << 8) | p[i];
  return x;
}

inline uint64_t Rot32(uint64_t x) { return (x >> 32) | (x << 32); }

inline uint32_t Rotl32(uint32_t x, unsigned count) { return count == 0 ? x : (x << count) | (x >> (32 - count)); }

void Reset(State* s, const uint64_t key[4]) {
  for (int i = 0; i < 4; i++) {
    s->mul0[i] = kInitMul0[i];
    s->mul1[i] = kInitMul1[i];
    s->v0[i] = s->mul0[i] ^ key[i];
    s->v1[i] = s->mul1[i] ^ Rot32(key[i]);
  }
}

// The byte "zipper" shuffle of the 128-bit lane (lo, hi), added into (addLo, addHi).
// Output bytes take lane bytes 3,12,2,5,14,1,15,0 | 11,4,10,13,9,6,8,7 (lo = 0..7,
// hi = 8..15): it spreads the well-mixed middle bytes of the products.
inline void ZipperAdd(uint64_t lo, uint64_t hi, uint64_t* addLo, uint64_t* addHi) {
  *addLo += ((lo >> 24) & 0xff) | (((hi >> 32) & 0xff) << 8) | (lo & 0xff0000) | (((lo >> 40) & 0xff) << 24) |
            (((hi >> 48) & 0xff) << 32) | (((lo >> 8) & 0xff) << 40) | ((hi >> 56) << 48) | (lo << 56);
  *addHi += ((hi >> 24) & 0xff) | (((lo >> 32) & 0xff) << 8) | (hi & 0xff0000) | (((hi >> 40) & 0xff) << 24) |
            (((hi >> 8) & 0xff) << 32) | (((lo >> 48) & 0xff) << 40) | ((hi & 0xff) << 48) |
            (lo & 0xff00000000000000ull);
}

void Update(State* s, const uint64_t lanes[4]) {
  for (int i = 0; i < 4; i++) {
    s->v1[i] += s->mul0[i] + lanes[i];
    s->mul0[i] ^= (s->v1[i] & 0xffffffffu) * (s->v0[i] >> 32);
    s->v0[i] += s->mul1[i];
    s->mul1[i] ^= (s->v0[i] & 0xffffffffu) * (s->v1[i] >> 32);
  }
  ZipperAdd(s->v1[0], s->v1[1], &s->v0[0], &s->v0[1]);
  ZipperAdd(s->v1[2], s->v1[3], &s->v0[2], &s->v0[3]);
  ZipperAdd(s->v0[0], s->v0[1], &s->v1[0], &s->v1[1]);
  ZipperAdd(s->v0[2], s->v0[3], &s->v1[2], &s->v1[3]);
}

void UpdatePacket(State* s, const uint8_t* packet) {
  uint64_t lanes[4];
  for (int i = 0; i < 4; i++) lanes[i] = Load64(packet + 8 * i);
  Update(s, lanes);
}

void UpdateTail(State* s, const uint8_t* tail, size_t tailBytes) {
  const uint64_t n = tailBytes;
  for (int i = 0; i < 4; i++) {
    s->v0[i] += (n << 32) + n;
    uint32_t lo = static_cast<uint32_t>(s->v1[i]);
    uint32_t hi = static_cast<uint32_t>(s->v1[i] >> 32);
    s->v1[i] = Rotl32(lo, static_cast<unsigned>(n)) | (static_cast<uint64_t>(Rotl32(hi, static_cast<unsigned>(n))) << 32);
  }
  uint8_t packet[kPacketBytes];
  TailPacket(tail, tailBytes, packet);
  UpdatePacket(s, packet);
}

void Finalize256(State* s, uint8_t digest[kDigestBytes]) {
  constexpr int kRounds = 10;  // 256-bit output
  for (int r = 0; r < kRounds; r++) {
    const uint64_t permuted[4] = {Rot32(s->v0[2]), Rot32(s->v0[3]), Rot32(s->v0[0]), Rot32(s->v0[1])};
    Update(s, permuted);
  }
  Reduce256(s->v0, s->v1, s->mul0, s->mul1, digest);
}

inline void Store64(uint64_t x, uint8_t* p) {
  for (int i = 0; i < 8; i++) p[i] = static_cast<uint8_t>(x >> (8 * i));
}

// (a3:a2:a1:a0) with a3's top two bits cleared, reduced to 128 bits (m1:m0).
void ModularReduction(uint64_t a3, uint64_t a2, uint64_t a1, uint64_t a0, uint64_t* m1, uint64_t* m0) {
  a3 &= 0x3fffffffffffffffull;
  *m1 = a1 ^ ((a3 << 1) | (a2 >> 63)) ^ ((a3 << 2) | (a2 >> 62));
  *m0 = a0 ^ (a2 << 1) ^ (a2 << 2);
}

}  // namespace

void TailPacket(const uint8_t* tail, size_t tailBytes, uint8_t packet[kPacketBytes]) {
  std::memset(packet, 0, kPacketBytes);
  const size_t mod4 = tailBytes & 3;
  const size_t whole = tailBytes & ~static_cast<size_t>(3);  // bytes copied as they are
  const uint8_t* rest = tail + whole;
  std::memcpy(packet, tail, whole);
  if (tailBytes & 16) {
    // The last four input bytes go to the end of the packet (may overlap the copy).
    for (size_t i = 0; i < 4; i++) packet[28 + i] = rest[i + mod4 - 4];
  } else if (mod4 != 0) {
    packet[16] = rest[0];
    packet[17] = rest[mod4 >> 1];
    packet[18] = rest[mod4 - 1];
  }
}

void Reduce256(const uint64_t v0[4], const uint64_t v1[4], const uint64_t mul0[4], const uint64_t mul1[4],
               uint8_t digest[kDigestBytes]) {
  uint64_t h[4];
  ModularReduction(v1[1] + mul1[1], v1[0] + mul1[0], v0[1] + mul0[1], v0[0] + mul0[0], &h[1], &h[0]);
  ModularReduction(v1[3] + mul1[3], v1[2] + mul1[2], v0[3] + mul0[3], v0[2] + mul0[2], &h[3], &h[2]);
  for (int i = 0; i < 4; i++) Store64(h[i], digest + 8 * i);
}

void Hash256Scalar(const uint64_t key[4], const uint8_t* data, size_t length, uint8_t digest[kDigestBytes]) {
  State s;
  Reset(&s, key);
  const size_t whole = length - length % kPacketBytes;
  for (size_t off = 0; off < whole; off += kPacketBytes) UpdatePacket(&s, data + off);
  if (length != whole) UpdateTail(&s, data + whole, length - whole);
  Finalize256(&s, digest);
}

}  // namespace hh
