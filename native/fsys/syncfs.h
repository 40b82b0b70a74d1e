// N-API export of syncfs(fd) -> Promise<void>, registered by the one addon (native/rs/binding.cc Init).
#pragma once
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>

namespace fsys {
// Adds syncfs(fd) -> Promise<void> to exports.
napi_status RegisterExports(napi_env env, napi_value exports);
}  // namespace fsys
