// N-API exports of AES-256-GCM over buffers the caller owns (cipher formats v1 and v2 of encrypted
// chunk payloads, docs/transforms.md), registered by the one addon (native/rs/binding.cc
// Init). OpenSSL's EVP functions come from the Node binary that loads the addon (it exports them;
// headers in $(npm config get nodedir)/include/node/openssl): no library of our own to build.
#pragma once
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>

namespace gcm {
// Adds gcmOpenSegments, gcmSealSegments and gcmOpenMessage to exports.
napi_status RegisterExports(napi_env env, napi_value exports);
}  // namespace gcm
