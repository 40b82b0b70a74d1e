// AVX2 HighwayHash-256 kernel: each of v0, v1, mul0, mul1 is one 256-bit register
// (four u64 lanes), the 32x32->64 multiplies are vpmuludq and the zipper shuffle
// is one vpshufb per register. Compiled for baseline x86-64 with a target
// attribute; only called after runtime CPU detection (highwayhash.cc).
#include "highwayhash.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace hh {
namespace {

#define HH_AVX2 __attribute__((target("avx2")))

struct State {
  __m256i v0, v1, mul0, mul1;
};

// Per 128-bit lane: output byte j = input byte kZipper[j] (see ZipperAdd in
// highwayhash_scalar.cc for the same permutation as shifts).
HH_AVX2 inline __m256i ZipperMask() {
  return _mm256_setr_epi8(3, 12, 2, 5, 14, 1, 15, 0, 11, 4, 10, 13, 9, 6, 8, 7,  //
                          3, 12, 2, 5, 14, 1, 15, 0, 11, 4, 10, 13, 9, 6, 8, 7);
}

HH_AVX2 inline __m256i Rot32(__m256i x) { return _mm256_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1)); }

HH_AVX2 inline __m256i LoadKey(const uint64_t key[4]) {
  return _mm256_setr_epi64x(static_cast<long long>(key[0]), static_cast<long long>(key[1]),
                            static_cast<long long>(key[2]), static_cast<long long>(key[3]));
}

HH_AVX2 inline void Reset(State* s, const uint64_t key[4]) {
  const __m256i k = LoadKey(key);
  s->mul0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kInitMul0));
  s->mul1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kInitMul1));
  s->v0 = _mm256_xor_si256(s->mul0, k);
  s->v1 = _mm256_xor_si256(s->mul1, Rot32(k));
}

HH_AVX2 inline void Update(State* s, __m256i lanes, __m256i zipper) {
  s->v1 = _mm256_add_epi64(s->v1, _mm256_add_epi64(s->mul0, lanes));
  s->mul0 = _mm256_xor_si256(s->mul0, _mm256_mul_epu32(s->v1, _mm256_srli_epi64(s->v0, 32)));
  s->v0 = _mm256_add_epi64(s->v0, s->mul1);
  s->mul1 = _mm256_xor_si256(s->mul1, _mm256_mul_epu32(s->v0, _mm256_srli_epi64(s->v1, 32)));
  s->v0 = _mm256_add_epi64(s->v0, _mm256_shuffle_epi8(s->v1, zipper));
  s->v1 = _mm256_add_epi64(s->v1, _mm256_shuffle_epi8(s->v0, zipper));
}

HH_AVX2 inline void UpdateTail(State* s, const uint8_t* tail, size_t tailBytes, __m256i zipper) {
  const int n = static_cast<int>(tailBytes);  // 1..31
  s->v0 = _mm256_add_epi64(s->v0, _mm256_set1_epi32(n));  // adds (n << 32) + n to each u64
  const __m128i left = _mm_cvtsi32_si128(n);
  const __m128i right = _mm_cvtsi32_si128(32 - n);
  s->v1 = _mm256_or_si256(_mm256_sll_epi32(s->v1, left), _mm256_srl_epi32(s->v1, right));
  alignas(32) uint8_t packet[kPacketBytes];
  TailPacket(tail, tailBytes, packet);
  Update(s, _mm256_load_si256(reinterpret_cast<const __m256i*>(packet)), zipper);
}

HH_AVX2 inline void Finalize256(State* s, uint8_t digest[kDigestBytes], __m256i zipper) {
  constexpr int kRounds = 10;  // 256-bit output
  for (int r = 0; r < kRounds; r++) {
    // Lanes (v0[2], v0[3], v0[0], v0[1]), each with its 32-bit halves swapped.
    const __m256i permuted = Rot32(_mm256_permute4x64_epi64(s->v0, _MM_SHUFFLE(1, 0, 3, 2)));
    Update(s, permuted, zipper);
  }
  alignas(32) uint64_t v0[4], v1[4], mul0[4], mul1[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(v0), s->v0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(v1), s->v1);
  _mm256_store_si256(reinterpret_cast<__m256i*>(mul0), s->mul0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(mul1), s->mul1);
  Reduce256(v0, v1, mul0, mul1, digest);
}

}  // namespace

HH_AVX2 void Hash256Avx2(const uint64_t key[4], const uint8_t* data, size_t length, uint8_t digest[kDigestBytes]) {
  const __m256i zipper = ZipperMask();
  State s;
  Reset(&s, key);
  const size_t whole = length - length % kPacketBytes;
  for (size_t off = 0; off < whole; off += kPacketBytes) {
    Update(&s, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + off)), zipper);
  }
  if (length != whole) UpdateTail(&s, data + whole, length - whole, zipper);
  Finalize256(&s, digest, zipper);
}

// Two equal-length inputs at once: one HighwayHash is a serial chain (each packet
// waits on the previous multiply and shuffles), so two independent states keep
// the vector units busy in the latency gaps. Digests equal two Hash256Avx2 calls.
HH_AVX2 void Hash256x2Avx2(const uint64_t keyA[4], const uint64_t keyB[4], const uint8_t* a, const uint8_t* b,
                           size_t length, uint8_t digestA[kDigestBytes], uint8_t digestB[kDigestBytes]) {
  const __m256i zipper = ZipperMask();
  State sa, sb;
  Reset(&sa, keyA);
  Reset(&sb, keyB);
  const size_t whole = length - length % kPacketBytes;
  for (size_t off = 0; off < whole; off += kPacketBytes) {
    Update(&sa, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + off)), zipper);
    Update(&sb, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + off)), zipper);
  }
  if (length != whole) {
    UpdateTail(&sa, a + whole, length - whole, zipper);
    UpdateTail(&sb, b + whole, length - whole, zipper);
  }
  Finalize256(&sa, digestA, zipper);
  Finalize256(&sb, digestB, zipper);
}

}  // namespace hh

#else  // not x86: never selected (DetectKernel returns scalar), kept for linking.

namespace hh {
void Hash256Avx2(const uint64_t key[4], const uint8_t* data, size_t length, uint8_t digest[kDigestBytes]) {
  Hash256Scalar(key, data, length, digest);
}
void Hash256x2Avx2(const uint64_t keyA[4], const uint64_t keyB[4], const uint8_t* a, const uint8_t* b, size_t length,
                   uint8_t digestA[kDigestBytes], uint8_t digestB[kDigestBytes]) {
  Hash256Scalar(keyA, a, length, digestA);
  Hash256Scalar(keyB, b, length, digestB);
}
}  // namespace hh

#endif
