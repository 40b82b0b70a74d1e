// The name table's functions of the addon (entry_table.h), defined on its exports.
#pragma once
#include <node_api.h>

namespace fuse3 {

void DefineEntries(napi_env env, napi_value exports);

}  // namespace fuse3
