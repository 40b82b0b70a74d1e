// Cipher format v2 segments opened with one cipher context (gcm_segments.h).
#include "gcm_segments.h"

#include <cstring>

namespace gcm {
namespace {

void StoreU64Le(uint8_t* p, uint64_t v) {
  for (int b = 0; b < 8; b++) p[b] = static_cast<uint8_t>(v >> (8 * b));
}

}  // namespace

const EVP_CIPHER* Aes256Gcm() {
  static const EVP_CIPHER* cipher = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
  return cipher;
}

uint64_t SegmentCountOf(uint64_t plainLen, uint64_t segmentBytes) {
  return plainLen == 0 ? 1 : (plainLen + segmentBytes - 1) / segmentBytes;
}

void SegmentNonce(const uint8_t* base, uint64_t i, uint8_t nonce[kNonceBytes]) {
  std::memcpy(nonce, base, kNonceBytes);
  for (int b = 0; b < 8; b++) nonce[4 + b] ^= static_cast<uint8_t>(i >> (8 * b));
}

void SegmentAad(uint64_t plainLen, uint64_t i, bool last, uint8_t aad[kAadBytes]) {
  StoreU64Le(aad, plainLen);
  StoreU64Le(aad + 8, i);
  aad[16] = last ? 1 : 0;
}

int64_t OpenSegments(const Geometry& g, uint64_t first, uint64_t last, const uint8_t* in, uint8_t* out) {
  const EVP_CIPHER* cipher = Aes256Gcm();
  Context c;
  if (cipher == nullptr || c.get() == nullptr || EVP_DecryptInit_ex(c.get(), cipher, nullptr, g.key, nullptr) != 1) return -2;
  const uint8_t* src = in;
  uint8_t* dst = out;
  for (uint64_t i = first; i <= last; i++) {
    const size_t n = static_cast<size_t>(g.PlainHi(i) - g.PlainLo(i));
    uint8_t nonce[kNonceBytes], aad[kAadBytes];
    SegmentNonce(g.nonceBase, i, nonce);
    SegmentAad(g.plainLen, i, i + 1 == g.segmentCount, aad);
    int outl = 0;
    const bool ok = EVP_DecryptInit_ex(c.get(), nullptr, nullptr, nullptr, nonce) == 1
        && EVP_DecryptUpdate(c.get(), nullptr, &outl, aad, static_cast<int>(kAadBytes)) == 1
        && (n == 0 || EVP_DecryptUpdate(c.get(), dst, &outl, src, static_cast<int>(n)) == 1)
        && EVP_CIPHER_CTX_ctrl(c.get(), EVP_CTRL_AEAD_SET_TAG, static_cast<int>(kTagBytes), const_cast<uint8_t*>(src + n)) == 1
        && EVP_DecryptFinal_ex(c.get(), dst + n, &outl) == 1;
    if (!ok) {
      std::memset(out, 0, static_cast<size_t>(g.PlainHi(last) - g.PlainLo(first)));
      return static_cast<int64_t>(i);
    }
    src += n + kTagBytes;
    dst += n;
  }
  return -1;
}

}  // namespace gcm
