// The directory attribute table's functions of the addon (attr_table.h), defined on its exports.
#pragma once
#include <node_api.h>

namespace fuse3 {

void DefineAttrs(napi_env env, napi_value exports);

}  // namespace fuse3
