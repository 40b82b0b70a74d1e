// The read-grant functions JS calls (read_grant.h; fs/fuse/read-grants.ts):
//   grantEpoch(session) -> number: the epoch a grant made now must carry
//   grantsBump(session): every grant is void and closed (the store changed something a read shows)
//   grantRead(session, epoch, paths: string[], nums: Float64Array, tables: Buffer, keys: Buffer,
//             cipher: Buffer) -> true | string (why not)
//     paths: the granted shards (replica: 1; EC: the k data shards, '' where not granted);
//     nums: [ino, chunkIndex, chunkSizeBytes, fileSizeBytes, dataAtBytes, blockBytes,
//            shardDataLenBytes, logicalLenBytes, ttlMs, segmentBytes, payloadLenBytes, ecK,
//            ecBlockBytes]; tables: each shard's hash table in turn, all of one size (zeros where
//     not granted); keys: each shard's block 0 key, 32 bytes (spec §4.1); cipher: empty for a raw
//     chunk, else nonce_base (12) || data key (32) of an encrypted chunk's cipher format v2
//     payload, segmentBytes > 0 (read_grant.h)
//   grantStats(session) -> [served, declined, granted now, bytes served]
#include "grant_binding.h"

#include <cstring>
#include <string>
#include <vector>

#include "napi_args.h"
#include "session.h"

namespace fuse3 {
namespace {

constexpr size_t kGrantNums = 13;

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
  if (type != napi_float64_array || length != kGrantNums) return a.Fail("nums: expected a Float64Array of 13");
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

// The shard paths (an array of strings, at most kGrantDataShardsMax).
bool GetPaths(Args& a, size_t i, std::vector<std::string>* out) {
  bool isArray = false;
  uint32_t n = 0;
  if (!a.ok || napi_is_array(a.env, a.At(i), &isArray) != napi_ok || !isArray) return a.Fail("paths: expected an array");
  napi_get_array_length(a.env, a.At(i), &n);
  if (n == 0 || n > kGrantDataShardsMax) return a.Fail("paths: expected 1 to 32 paths");
  for (uint32_t k = 0; k < n; k++) {
    napi_value v;
    size_t len = 0;
    if (napi_get_element(a.env, a.At(i), k, &v) != napi_ok || napi_get_value_string_utf8(a.env, v, nullptr, 0, &len) != napi_ok) return a.Fail("paths: expected strings");
    std::string s(len, '\0');
    napi_get_value_string_utf8(a.env, v, s.data(), len + 1, &len);
    out->push_back(std::move(s));
  }
  return true;
}

napi_value GrantRead(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  double epoch = a.Number(1, "epoch: expected a number");
  std::vector<std::string> paths;
  GetPaths(a, 2, &paths);
  double nums[kGrantNums] = {};
  GetNums(a, 3, nums);
  char* tables = nullptr;
  size_t tablesBytes = 0;
  a.Bytes(4, "tables: expected a Buffer", &tables, &tablesBytes);
  char* keys = nullptr;
  size_t keysBytes = 0;
  a.Bytes(5, "keys: expected a Buffer", &keys, &keysBytes);
  if (a.ok && keysBytes != hh::kKeyBytes * paths.size()) a.Fail("keys: expected 32 bytes per path");
  if (a.ok && tablesBytes % paths.size() != 0) a.Fail("tables: expected one table of one size per path");
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
  g.payloadLenBytes = static_cast<uint64_t>(nums[10]);
  g.ecK = static_cast<uint64_t>(nums[11]);
  g.ecBlockBytes = static_cast<uint64_t>(nums[12]);
  if (encrypted) {
    std::memcpy(g.nonceBase, cipher, gcm::kNonceBytes);
    std::memcpy(g.dataKey, cipher + gcm::kNonceBytes, gcm::kKeyBytes);
  }
  const size_t tableBytes = tablesBytes / paths.size();
  g.shards.resize(paths.size());
  for (size_t i = 0; i < paths.size(); i++) {
    GrantShard& sh = g.shards[i];
    sh.path = std::move(paths[i]);
    const char* key = keys + hh::kKeyBytes * i;
    for (int w = 0; w < 4; w++) {
      uint64_t x = 0;
      for (int b = 7; b >= 0; b--) x = (x << 8) | static_cast<uint8_t>(key[8 * w + b]);  // DESIGN §3: little-endian words
      sh.keyWords[w] = x;
    }
    if (!sh.path.empty()) sh.table.assign(tables + tableBytes * i, tables + tableBytes * (i + 1));
  }
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
