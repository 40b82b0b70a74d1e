// The read-grant functions of the addon (read_grant.h), defined on its exports.
#pragma once
#include <node_api.h>

namespace fuse3 {

void DefineGrants(napi_env env, napi_value exports);

}  // namespace fuse3
