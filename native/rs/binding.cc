// N-API binding for the GF(2^8) kernels behind src/rs.ts (DESIGN.md §3).
// Synchronous: a 4+2 stripe of 256 KiB shards takes tens of microseconds,
// less than a thread-pool hop. Every argument is checked here as well as in
// TypeScript (pair assertions): a bad call must throw, never write out of bounds.
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gf_kernels.h"
#include "../highway/binding_highway.h"
#include "../memory/huge_alloc.h"
#include "../fsys/syncfs.h"
#include "../cipher/aes_gcm.h"
#include "../napi_bytes.h"

namespace {

constexpr int kShardsMax = 256;

napi_value Fail(napi_env env, const char* message) {
  napi_throw_range_error(env, "ERR_CHUNKFS_RS_NATIVE", message);
  return nullptr;
}

using napi_bytes::GetBytes;

bool GetInt(napi_env env, napi_value value, int64_t lo, int64_t hi, int64_t* out) {
  if (napi_get_value_int64(env, value, out) != napi_ok) return false;
  return *out >= lo && *out <= hi;
}

// Reads an array of Uint8Array, each at least minLength bytes long.
bool GetShardList(napi_env env, napi_value list, uint32_t count, size_t minLength, std::vector<uint8_t*>* out) {
  bool isArray = false;
  uint32_t length = 0;
  if (napi_is_array(env, list, &isArray) != napi_ok || !isArray) return false;
  if (napi_get_array_length(env, list, &length) != napi_ok || length != count) return false;
  out->resize(count);
  for (uint32_t i = 0; i < count; i++) {
    napi_value item;
    size_t itemLength = 0;
    if (napi_get_element(env, list, i, &item) != napi_ok) return false;
    if (!GetBytes(env, item, &(*out)[i], &itemLength) || itemLength < minLength) return false;
  }
  return true;
}

bool Overlaps(const uint8_t* a, const uint8_t* b, size_t length) { return a < b + length && b < a + length; }

// mulMatrix(coef, rows, cols, inputs, outputs, lengthBytes)
napi_value MulMatrix(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 6) return Fail(env, "mulMatrix: expected 6 arguments");
  uint8_t* coef = nullptr;
  size_t coefLength = 0;
  int64_t rows = 0, cols = 0, length = 0;
  if (!GetInt(env, argv[1], 1, kShardsMax, &rows)) return Fail(env, "mulMatrix: rows out of range");
  if (!GetInt(env, argv[2], 1, kShardsMax, &cols)) return Fail(env, "mulMatrix: cols out of range");
  if (!GetInt(env, argv[5], 0, INT64_C(1) << 40, &length)) return Fail(env, "mulMatrix: length out of range");
  if (!GetBytes(env, argv[0], &coef, &coefLength) || coefLength != static_cast<size_t>(rows * cols)) {
    return Fail(env, "mulMatrix: coef must be a Uint8Array of rows*cols bytes");
  }
  std::vector<uint8_t*> in, out;
  size_t bytes = static_cast<size_t>(length);
  if (!GetShardList(env, argv[3], static_cast<uint32_t>(cols), bytes, &in)) {
    return Fail(env, "mulMatrix: inputs must be cols Uint8Arrays of at least length bytes");
  }
  if (!GetShardList(env, argv[4], static_cast<uint32_t>(rows), bytes, &out)) {
    return Fail(env, "mulMatrix: outputs must be rows Uint8Arrays of at least length bytes");
  }
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t c = 0; c < cols; c++) {
      if (Overlaps(out[r], in[c], bytes)) return Fail(env, "mulMatrix: an output overlaps an input");
    }
    for (int64_t q = 0; q < r; q++) {
      if (Overlaps(out[r], out[q], bytes)) return Fail(env, "mulMatrix: two outputs overlap");
    }
  }
  if (bytes > 0) gf::MulMatrix(coef, static_cast<int>(rows), static_cast<int>(cols), in.data(), out.data(), bytes);
  return nullptr;
}

napi_value LevelString(napi_env env, gf::Level level) {
  napi_value result;
  napi_create_string_utf8(env, gf::LevelName(level), NAPI_AUTO_LENGTH, &result);
  return result;
}

napi_value SimdLevel(napi_env env, napi_callback_info) { return LevelString(env, gf::ActiveLevel()); }
napi_value DetectedLevel(napi_env env, napi_callback_info) { return LevelString(env, gf::DetectLevel()); }

// setSimdLevel(name): clamps to what the CPU supports; returns the level now active.
napi_value SetSimdLevel(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  char name[32] = {0};
  size_t nameLength = 0;
  if (argc != 1 || napi_get_value_string_utf8(env, argv[0], name, sizeof(name), &nameLength) != napi_ok) {
    return Fail(env, "setSimdLevel: expected a level name");
  }
  for (int level = 0; level < gf::kLevelCount; level++) {
    if (std::strcmp(name, gf::LevelName(static_cast<gf::Level>(level))) == 0) {
      return LevelString(env, gf::SetLevel(static_cast<gf::Level>(level)));
    }
  }
  return Fail(env, "setSimdLevel: unknown level name");
}

napi_value Init(napi_env env, napi_value exports) {
  const napi_property_descriptor props[] = {
      {"mulMatrix", nullptr, MulMatrix, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"simdLevel", nullptr, SimdLevel, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"detectedSimdLevel", nullptr, DetectedLevel, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"setSimdLevel", nullptr, SetSimdLevel, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  hh::RegisterExports(env, exports);  // HighwayHash-256 shares this addon
  mem::RegisterExports(env, exports);  // so do huge-page buffers
  gcm::RegisterExports(env, exports);  // and AES-256-GCM into our own buffers
  fsys::RegisterExports(env, exports);  // and syncfs(2), off the JS thread
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
