// N-API exports of allocHuge, releasePages, trimMalloc and mallocInUseBytes: buffers backed by transparent huge pages, registered by the one addon
// (native/rs/binding.cc Init).
#pragma once
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>

namespace mem {
// Adds allocHuge(bytes) -> Buffer, releasePages(buffer) -> bool, trimMalloc() -> bool and
// mallocInUseBytes() -> number to exports.
napi_status RegisterExports(napi_env env, napi_value exports);
}  // namespace mem
