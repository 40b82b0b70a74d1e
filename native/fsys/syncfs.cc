// syncfs(fd) -> Promise<void>: syncfs(2) of the file system holding fd, on a libuv pool thread (it
// blocks until every dirty page and the journal of that file system are on the device). Node has
// no binding for it. Rejects with an Error whose code is the errno's name (EIO, ENOSPC, ...), as
// Node's own fs errors; since Linux 5.8 syncfs reports writeback errors of the file system's files
// seen since fd was opened or last synced (DESIGN §5 "One syncfs per file system").
#include "syncfs.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <string>

namespace fsys {
namespace {

struct SyncWork {
  int fd;
  int error;
  napi_deferred deferred;
  napi_async_work work;
};

void Execute(napi_env, void* data) {
  auto* w = static_cast<SyncWork*>(data);
  w->error = syncfs(w->fd) == 0 ? 0 : errno;
}

void Complete(napi_env env, napi_status, void* data) {
  auto* w = static_cast<SyncWork*>(data);
  if (w->error == 0) {
    napi_value undefined;
    napi_get_undefined(env, &undefined);
    napi_resolve_deferred(env, w->deferred, undefined);
  } else {
    const char* name = strerrorname_np(w->error);
    std::string message = std::string(name != nullptr ? name : "E?") + ": " + strerror(w->error) + ", syncfs";
    napi_value code, text, err, errnoValue;
    napi_create_string_utf8(env, name != nullptr ? name : "EIO", NAPI_AUTO_LENGTH, &code);
    napi_create_string_utf8(env, message.c_str(), NAPI_AUTO_LENGTH, &text);
    napi_create_error(env, code, text, &err);
    napi_create_int32(env, -w->error, &errnoValue);
    napi_set_named_property(env, err, "errno", errnoValue);
    napi_reject_deferred(env, w->deferred, err);
  }
  napi_delete_async_work(env, w->work);
  delete w;
}

napi_value Syncfs(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  int32_t fd = -1;
  if (argc != 1 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0) {
    napi_throw_type_error(env, nullptr, "syncfs: expected an open file descriptor");
    return nullptr;
  }
  auto* w = new SyncWork{fd, 0, nullptr, nullptr};
  napi_value promise, name;
  napi_create_promise(env, &w->deferred, &promise);
  napi_create_string_utf8(env, "chunkfs_syncfs", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(env, nullptr, name, Execute, Complete, w, &w->work);
  napi_queue_async_work(env, w->work);
  return promise;
}

}  // namespace

napi_status RegisterExports(napi_env env, napi_value exports) {
  const napi_property_descriptor props[] = {
      {"syncfs", nullptr, Syncfs, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
  };
  return napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}

}  // namespace fsys
