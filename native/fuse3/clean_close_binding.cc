// The clean-close marks' function JS calls (clean_closes.h; fs/fuse/fuse3.ts), on the JS thread:
//   cleanCloseForget(session, ino): JS began storing the open file's bytes; its next FLUSH goes to
//     JS (which reports that store's failure). Never throws for a destroyed session.
#include "clean_close_binding.h"

#include "napi_args.h"

namespace fuse3 {
namespace {

// Called from the write-back buffer's flush (fs/write-buffer.ts): a throw there would fail the flush.
napi_value CleanCloseForget(napi_env env, napi_callback_info info) {
  Args a(env, info);
  double ino = a.Number(1, "ino: expected a number");
  Session* s = a.LiveOrGone(0);
  if (s == nullptr) return nullptr;
  s->cleanCloses()->Forget(static_cast<uint64_t>(ino));
  return nullptr;
}

}  // namespace

void DefineCleanCloses(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"cleanCloseForget", nullptr, CleanCloseForget, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}

}  // namespace fuse3
