// AES-256-GCM straight into the caller's buffers (docs/transforms.md "Cipher format v2").
// Node's Decipher.update allocates a fresh output buffer per call and copies it again (and a
// context per segment costs ~3 us); here one call opens or seals many segments with one cipher
// context (key schedule set once, only the nonce reset per segment), writing into memory we own.
// Synchronous: a 4 MiB chunk takes about a millisecond, and callers run it on decode threads
// (store/chunks/decode-pool.ts) when it is large. Every argument is checked here as well as in
// TypeScript (src/gcm-native.ts): a bad call throws, never reads or writes out of bounds.
//
// v2 (src/chunk-segments.ts): nonce i = nonce_base with bytes [4, 12) XOR i (u64 LE);
// AAD i = plain_len u64 LE || i u64 LE || last u8. A segment whose tag fails zeroes the whole
// target and returns its index: no byte of the call's output is usable then (the tag is checked
// before any byte reaches a reader).
#include "aes_gcm.h"

#include <openssl/evp.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "../napi_bytes.h"
#include "gcm_segments.h"

namespace gcm {
namespace {

constexpr int64_t kSegmentBytesMin = 4096;
constexpr int64_t kSegmentBytesMax = INT64_C(1) << 20;
constexpr int64_t kPlainBytesMax = INT64_C(1) << 40;  // far above any chunk; keeps products in range
constexpr size_t kUpdateBytesMax = size_t{1} << 30;  // EVP takes int lengths: a v1 body goes in pieces

using napi_bytes::GetBytes;

napi_value Fail(napi_env env, const char* message) {
  napi_throw_range_error(env, "ERR_CHUNKFS_GCM_NATIVE", message);
  return nullptr;
}

bool GetInt(napi_env env, napi_value value, int64_t lo, int64_t hi, int64_t* out) {
  napi_valuetype type;
  if (napi_typeof(env, value, &type) != napi_ok || type != napi_number) return false;
  double d = 0;
  if (napi_get_value_double(env, value, &d) != napi_ok || !std::isfinite(d) || d != std::floor(d)) return false;
  if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

bool Overlaps(const uint8_t* a, size_t aLength, const uint8_t* b, size_t bLength) {
  return aLength > 0 && bLength > 0 && a < b + bLength && b < a + aLength;
}

const char* ParseGeometry(napi_env env, napi_value* argv, Geometry* g) {
  uint8_t* bytes = nullptr;
  size_t length = 0;
  if (!GetBytes(env, argv[0], &bytes, &length) || length != kKeyBytes) return "data key must be a 32-byte Uint8Array";
  g->key = bytes;
  if (!GetBytes(env, argv[1], &bytes, &length) || length != kNonceBytes) return "nonce base must be a 12-byte Uint8Array";
  g->nonceBase = bytes;
  int64_t plainLen = 0, segmentBytes = 0;
  if (!GetInt(env, argv[2], 0, kPlainBytesMax, &plainLen)) return "plain length out of range";
  if (!GetInt(env, argv[3], kSegmentBytesMin, kSegmentBytesMax, &segmentBytes)) return "segment_bytes out of range";
  g->plainLen = static_cast<uint64_t>(plainLen);
  g->segmentBytes = static_cast<uint64_t>(segmentBytes);
  g->segmentCount = SegmentCountOf(g->plainLen, g->segmentBytes);
  return nullptr;
}

// gcmOpenSegments(dataKey, nonceBase, plainLen, segmentBytes, first, last, segments, target):
// segments [first, last] (their stored bytes: ciphertext || tag each, from segment first's offset)
// into target (exactly their plaintext). Returns -1, or the index of the first segment whose tag
// fails (target zeroed).
napi_value OpenSegmentsJs(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 8) return Fail(env, "gcmOpenSegments: expected 8 arguments");
  Geometry g;
  if (const char* error = ParseGeometry(env, argv, &g)) return Fail(env, error);
  int64_t first = 0, last = 0;
  const int64_t lastMax = static_cast<int64_t>(g.segmentCount) - 1;
  if (!GetInt(env, argv[4], 0, lastMax, &first) || !GetInt(env, argv[5], first, lastMax, &last)) {
    return Fail(env, "gcmOpenSegments: segments outside the payload");
  }
  uint8_t *in = nullptr, *out = nullptr;
  size_t inLength = 0, outLength = 0;
  if (!GetBytes(env, argv[6], &in, &inLength)) return Fail(env, "gcmOpenSegments: segments must be a Uint8Array");
  if (!GetBytes(env, argv[7], &out, &outLength)) return Fail(env, "gcmOpenSegments: target must be a Uint8Array");
  const uint64_t plainBytes = g.PlainHi(last) - g.PlainLo(first);
  const uint64_t count = static_cast<uint64_t>(last - first + 1);
  if (inLength != plainBytes + count * kTagBytes) return Fail(env, "gcmOpenSegments: stored bytes do not match the segments");
  if (outLength != plainBytes) return Fail(env, "gcmOpenSegments: target is not the segments' plaintext length");
  if (Overlaps(in, inLength, out, outLength)) return Fail(env, "gcmOpenSegments: target overlaps the stored bytes");
  const int64_t failed = OpenSegments(g, static_cast<uint64_t>(first), static_cast<uint64_t>(last), in, out);
  if (failed == -2) return Fail(env, "gcmOpenSegments: OpenSSL has no AES-256-GCM");
  napi_value result;
  napi_create_int64(env, failed, &result);
  return result;
}

// gcmSealSegments(dataKey, nonceBase, plainLen, segmentBytes, plain, out): every segment of plain
// sealed into out (ciphertext || tag each, from segment 0's offset: out is the payload after its
// 24-byte header).
napi_value SealSegmentsJs(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 6) return Fail(env, "gcmSealSegments: expected 6 arguments");
  Geometry g;
  if (const char* error = ParseGeometry(env, argv, &g)) return Fail(env, error);
  uint8_t *in = nullptr, *out = nullptr;
  size_t inLength = 0, outLength = 0;
  if (!GetBytes(env, argv[4], &in, &inLength) || inLength != g.plainLen) return Fail(env, "gcmSealSegments: plain must be a Uint8Array of plain length");
  if (!GetBytes(env, argv[5], &out, &outLength) || outLength != g.plainLen + g.segmentCount * kTagBytes) {
    return Fail(env, "gcmSealSegments: out must hold every segment and its tag");
  }
  if (Overlaps(in, inLength, out, outLength)) return Fail(env, "gcmSealSegments: out overlaps plain");
  const EVP_CIPHER* cipher = Aes256Gcm();
  Context c;
  if (cipher == nullptr || c.get() == nullptr || EVP_EncryptInit_ex(c.get(), cipher, nullptr, g.key, nullptr) != 1) {
    return Fail(env, "gcmSealSegments: OpenSSL has no AES-256-GCM");
  }
  const uint8_t* src = in;
  uint8_t* dst = out;
  for (uint64_t i = 0; i < g.segmentCount; i++) {
    const size_t n = static_cast<size_t>(g.PlainHi(i) - g.PlainLo(i));
    uint8_t nonce[kNonceBytes], aad[kAadBytes];
    SegmentNonce(g.nonceBase, i, nonce);
    SegmentAad(g.plainLen, i, i + 1 == g.segmentCount, aad);
    int outl = 0;
    bool ok = EVP_EncryptInit_ex(c.get(), nullptr, nullptr, nullptr, nonce) == 1
        && EVP_EncryptUpdate(c.get(), nullptr, &outl, aad, static_cast<int>(kAadBytes)) == 1
        && (n == 0 || EVP_EncryptUpdate(c.get(), dst, &outl, src, static_cast<int>(n)) == 1)
        && EVP_EncryptFinal_ex(c.get(), dst + n, &outl) == 1
        && EVP_CIPHER_CTX_ctrl(c.get(), EVP_CTRL_AEAD_GET_TAG, static_cast<int>(kTagBytes), dst + n) == 1;
    if (!ok) return Fail(env, "gcmSealSegments: OpenSSL failed to seal a segment");
    src += n;
    dst += n + kTagBytes;
  }
  return nullptr;
}

// gcmOpenMessage(dataKey, nonce, body, tag, target): one message without AAD (cipher format v1)
// into target (body's length). Returns true, or false when the tag fails (target zeroed).
napi_value OpenMessageJs(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 5) return Fail(env, "gcmOpenMessage: expected 5 arguments");
  uint8_t *key = nullptr, *nonce = nullptr, *in = nullptr, *tag = nullptr, *out = nullptr;
  size_t keyLength = 0, nonceLength = 0, inLength = 0, tagLength = 0, outLength = 0;
  if (!GetBytes(env, argv[0], &key, &keyLength) || keyLength != kKeyBytes) return Fail(env, "gcmOpenMessage: data key must be 32 bytes");
  if (!GetBytes(env, argv[1], &nonce, &nonceLength) || nonceLength != kNonceBytes) return Fail(env, "gcmOpenMessage: nonce must be 12 bytes");
  if (!GetBytes(env, argv[2], &in, &inLength)) return Fail(env, "gcmOpenMessage: body must be a Uint8Array");
  if (!GetBytes(env, argv[3], &tag, &tagLength) || tagLength != kTagBytes) return Fail(env, "gcmOpenMessage: tag must be 16 bytes");
  if (!GetBytes(env, argv[4], &out, &outLength) || outLength != inLength) return Fail(env, "gcmOpenMessage: target must be the body's length");
  if (Overlaps(in, inLength, out, outLength)) return Fail(env, "gcmOpenMessage: target overlaps the body");
  const EVP_CIPHER* cipher = Aes256Gcm();
  Context c;
  if (cipher == nullptr || c.get() == nullptr || EVP_DecryptInit_ex(c.get(), cipher, nullptr, key, nonce) != 1) {
    return Fail(env, "gcmOpenMessage: OpenSSL has no AES-256-GCM");
  }
  bool ok = true;
  int outl = 0;
  for (size_t at = 0; ok && at < inLength; at += kUpdateBytesMax) {
    const size_t n = inLength - at < kUpdateBytesMax ? inLength - at : kUpdateBytesMax;
    ok = EVP_DecryptUpdate(c.get(), out + at, &outl, in + at, static_cast<int>(n)) == 1;
  }
  ok = ok && EVP_CIPHER_CTX_ctrl(c.get(), EVP_CTRL_AEAD_SET_TAG, static_cast<int>(kTagBytes), tag) == 1
      && EVP_DecryptFinal_ex(c.get(), out + inLength, &outl) == 1;
  if (!ok) std::memset(out, 0, outLength);
  napi_value result;
  napi_get_boolean(env, ok, &result);
  return result;
}

}  // namespace

napi_status RegisterExports(napi_env env, napi_value exports) {
  const napi_property_descriptor props[] = {
      {"gcmOpenSegments", nullptr, OpenSegmentsJs, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"gcmSealSegments", nullptr, SealSegmentsJs, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"gcmOpenMessage", nullptr, OpenMessageJs, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
  };
  return napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}

}  // namespace gcm
