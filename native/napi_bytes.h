// One argument check shared by the addon's bindings (native/rs, native/highway):
// accept exactly a Uint8Array (Buffer included) and expose its bytes, so a wrong
// type is refused before any kernel touches memory.
#pragma once
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>

#include <cstddef>
#include <cstdint>

namespace napi_bytes {

inline bool GetBytes(napi_env env, napi_value value, uint8_t** data, size_t* length) {
  bool isTyped = false;
  if (napi_is_typedarray(env, value, &isTyped) != napi_ok || !isTyped) return false;
  napi_typedarray_type type;
  void* raw = nullptr;
  napi_value buffer;
  size_t offset = 0;
  if (napi_get_typedarray_info(env, value, &type, length, &raw, &buffer, &offset) != napi_ok) return false;
  if (type != napi_uint8_array) return false;
  *data = static_cast<uint8_t*>(raw);
  return true;
}

}  // namespace napi_bytes
