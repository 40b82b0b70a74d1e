// Cipher format v2 (src/chunk-segments.ts, docs/transforms.md): opening segments [first, last] of
// an encrypted chunk payload with one cipher context. Plain C++ over OpenSSL's EVP (from the Node
// binary that loads the addon): used by the N-API binding (aes_gcm.cc) and by read grants of
// encrypted chunks answered in C (native/fuse3/read_grant.cc), so both decrypt the same way.
//   nonce i = nonce_base with bytes [4, 12) XOR i (u64 LE)
//   AAD i   = plain_len u64 LE || i u64 LE || last u8 (1 on the last segment)
#pragma once
#include <openssl/evp.h>

#include <cstddef>
#include <cstdint>

namespace gcm {

constexpr size_t kKeyBytes = 32;
constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;
// A v2 payload's header: magic "CFSGCMv2" (8) || segment_bytes u32 LE (4) || nonce_base (12).
constexpr size_t kHeaderBytes = 24;

// AES-256-GCM fetched once (an implicit fetch per init takes a lock and a name lookup); null when
// OpenSSL has none. A fetched EVP_CIPHER is immutable: shared by all threads.
const EVP_CIPHER* Aes256Gcm();

// One cipher context, freed (its key schedule cleansed) on every path out.
class Context {
 public:
  Context() : ctx_(EVP_CIPHER_CTX_new()) {}
  ~Context() { EVP_CIPHER_CTX_free(ctx_); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  EVP_CIPHER_CTX* get() const { return ctx_; }

 private:
  EVP_CIPHER_CTX* ctx_;
};

// The v2 geometry both directions share.
struct Geometry {
  const uint8_t* key;        // kKeyBytes: the chunk version's data key
  const uint8_t* nonceBase;  // kNonceBytes, from the payload's header
  uint64_t plainLen;
  uint64_t segmentBytes;
  uint64_t segmentCount;
  uint64_t PlainLo(uint64_t i) const { return i * segmentBytes; }
  uint64_t PlainHi(uint64_t i) const { return i + 1 == segmentCount ? plainLen : (i + 1) * segmentBytes; }
};

// segmentCount of a payload of plainLen bytes (an empty payload is one empty segment).
uint64_t SegmentCountOf(uint64_t plainLen, uint64_t segmentBytes);

void SegmentNonce(const uint8_t* base, uint64_t i, uint8_t nonce[kNonceBytes]);
constexpr size_t kAadBytes = 17;
void SegmentAad(uint64_t plainLen, uint64_t i, bool last, uint8_t aad[kAadBytes]);

// Segments [first, last] of g from in (ciphertext || tag each, from segment first's ciphertext)
// into out (exactly their plaintext, PlainHi(last) - PlainLo(first) bytes; not overlapping in).
// The caller checked the bounds. Returns -1, or the index of the first segment whose tag fails
// (out zeroed then: no byte of it is usable); -2 when OpenSSL cannot set up AES-256-GCM.
int64_t OpenSegments(const Geometry& g, uint64_t first, uint64_t last, const uint8_t* in, uint8_t* out);

}  // namespace gcm
