// The read-grant functions JS calls (read_grant.h; fs/fuse/read-grants.ts):
//   grantEpoch(session) -> number: the epoch a grant made now must carry
//   grantsBump(session): every grant is void and closed (the store changed something a read shows)
//   grantRead(session, epoch, path, nums: Float64Array, table: Buffer, key: Buffer, cipher: Buffer)
//       -> true | string (why not)
//     nums: [ino, chunkIndex, chunkSizeBytes, fileSizeBytes, dataAtBytes, blockBytes,
//            shardDataLenBytes, logicalLenBytes, ttlMs, segmentBytes]; key: block 0's 32 key bytes
//     (spec §4.1); cipher: empty for a raw chunk, else nonce_base (12) || data key (32) of an
//     encrypted chunk's cipher format v2 payload, segmentBytes > 0 (read_grant.h)
//   grantStats(session) -> [served, declined, granted now, bytes served]
#include "grant_binding.h"

#include <cstring>
#include <string>

#include "napi_args.h"
#include "session.h"

namespace fuse3 {
namespace {

constexpr size_t kGrantNums = 10;

napi_value GrantEpoch(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  if (!a.ok) return nullptr;
  napi_value out;
  napi_create_double(env, static_cast<double>(s->grants()->epoch()), &out);
  return out;
}

napi_value GrantsBump(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  if (!a.ok) return nullptr;
  s->grants()->Revoke();  // JS calls this on its own thread (read_grant.h)
  return nullptr;
}

bool GetNums(Args& a, size_t i, double out[kGrantNums]) {
  bool isTyped = false;
  if (!a.ok || napi_is_typedarray(a.env, a.At(i), &isTyped) != napi_ok || !isTyped) return a.Fail("nums: expected a Float64Array");
  napi_typedarray_type type;
  size_t length = 0;
  void* data = nullptr;
  napi_get_typedarray_info(a.env, a.At(i), &type, &length, &data, nullptr, nullptr);
  if (type != napi_float64_array || length != kGrantNums) return a.Fail("nums: expected a Float64Array of 10");
  const double* d = static_cast<const double*>(data);
  for (size_t k = 0; k < kGrantNums; k++) {
    // Whole, non-negative and below 2^53 (lengths, offsets, inode numbers of this file system).
    if (!(d[k] >= 0 && d[k] <= 9007199254740991.0) || d[k] != static_cast<double>(static_cast<uint64_t>(d[k]))) {
      return a.Fail("nums: every field must be a whole number in [0, 2^53)");
    }
    out[k] = d[k];
  }
  return true;
}

napi_value GrantRead(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  double epoch = a.Number(1, "epoch: expected a number");
  std::string path = a.String(2, "path: expected a string");
  double nums[kGrantNums] = {};
  GetNums(a, 3, nums);
  char* table = nullptr;
  size_t tableBytes = 0;
  a.Bytes(4, "table: expected a Buffer", &table, &tableBytes);
  char* key = nullptr;
  size_t keyBytes = 0;
  a.Bytes(5, "key: expected a Buffer", &key, &keyBytes);
  if (a.ok && keyBytes != hh::kKeyBytes) a.Fail("key: expected 32 bytes");
  char* cipher = nullptr;
  size_t cipherBytes = 0;
  a.Bytes(6, "cipher: expected a Buffer", &cipher, &cipherBytes);
  const bool encrypted = nums[9] > 0;
  if (a.ok && cipherBytes != (encrypted ? gcm::kNonceBytes + gcm::kKeyBytes : 0)) a.Fail("cipher: expected 44 bytes with a segment size, none without");
  if (!a.ok) return nullptr;
  GrantSpec g;
  g.ino = static_cast<uint64_t>(nums[0]);
  g.chunkIndex = static_cast<uint64_t>(nums[1]);
  g.chunkSizeBytes = static_cast<uint64_t>(nums[2]);
  g.fileSizeBytes = static_cast<uint64_t>(nums[3]);
  g.dataAtBytes = static_cast<uint64_t>(nums[4]);
  g.blockBytes = static_cast<uint64_t>(nums[5]);
  g.shardDataLenBytes = static_cast<uint64_t>(nums[6]);
  g.logicalLenBytes = static_cast<uint64_t>(nums[7]);
  g.ttlMs = static_cast<uint64_t>(nums[8]);
  g.segmentBytes = static_cast<uint64_t>(nums[9]);
  if (encrypted) {
    std::memcpy(g.nonceBase, cipher, gcm::kNonceBytes);
    std::memcpy(g.dataKey, cipher + gcm::kNonceBytes, gcm::kKeyBytes);
  }
  g.path = std::move(path);
  for (int w = 0; w < 4; w++) {
    uint64_t x = 0;
    for (int b = 7; b >= 0; b--) x = (x << 8) | static_cast<uint8_t>(key[8 * w + b]);  // DESIGN §3: little-endian words
    g.keyWords[w] = x;
  }
  g.table.assign(table, table + tableBytes);
  std::string why;
  napi_value out;
  if (s->grants()->Add(static_cast<uint64_t>(epoch), std::move(g), &why)) napi_get_boolean(env, true, &out);
  else napi_create_string_utf8(env, why.c_str(), why.size(), &out);
  return out;
}

napi_value GrantStats(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  if (!a.ok) return nullptr;
  const ReadGrants* g = s->grants();
  napi_value out;
  napi_create_array_with_length(env, 4, &out);
  napi_value v;
  napi_create_double(env, static_cast<double>(g->served()), &v);
  napi_set_element(env, out, 0, v);
  napi_create_double(env, static_cast<double>(g->declined()), &v);
  napi_set_element(env, out, 1, v);
  napi_create_double(env, static_cast<double>(g->live()), &v);
  napi_set_element(env, out, 2, v);
  napi_create_double(env, static_cast<double>(g->servedBytes()), &v);
  napi_set_element(env, out, 3, v);
  return out;
}

}  // namespace

void DefineGrants(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"grantEpoch", nullptr, GrantEpoch, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"grantsBump", nullptr, GrantsBump, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"grantRead", nullptr, GrantRead, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"grantStats", nullptr, GrantStats, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}

}  // namespace fuse3
