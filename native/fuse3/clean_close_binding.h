// The clean-close marks' functions of the addon (clean_closes.h), defined on its exports.
#pragma once
#include <node_api.h>

namespace fuse3 {

void DefineCleanCloses(napi_env env, napi_value exports);

}  // namespace fuse3
