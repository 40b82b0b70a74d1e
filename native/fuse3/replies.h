// The reply functions JS calls, each answering one request by id (session.h Take) with
// fuse_reply_*; each returns libfuse's result (0, or a negative errno such as -ENOENT when the
// kernel had already given up on an interrupted request) and throws for an unknown id.
#pragma once
#include <node_api.h>

namespace fuse3 {

void DefineReplies(napi_env env, napi_value exports);

}  // namespace fuse3
