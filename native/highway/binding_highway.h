// N-API exports of the HighwayHash-256 batch calls, registered by the one addon
// (native/rs/binding.cc Init) so the store loads a single native module.
#pragma once
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>

namespace hh {
// Adds hash256, hashBlocks, verifyBlocks, highwayKernel, detectedHighwayKernel,
// setHighwayKernel to exports.
napi_status RegisterExports(napi_env env, napi_value exports);
}  // namespace hh
