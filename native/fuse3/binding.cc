// The chunkfs_fuse3 addon: mount a libfuse3 low-level session whose requests reach JS in batches
// (session.h), and answer them (replies.h). Used only by fs/fuse/fuse3.ts.
//   mount(options, onBatch, attrScratch) -> session
//   loopEnded(session) -> boolean
//   connectionId(session) -> number, or null once the connection ended
//   destroy(session) -> requests answered EIO because JS had not answered them
//   invalidate(session, inos: Float64Array) -> Promise<number of inodes the kernel dropped>
//   invalidateEntries(session, parents: Float64Array, names: string[]) -> Promise<number of names dropped>
//   unmountGuardFds(session) -> [pidfd of this process, fusermount3 socket] | string (why not)
#include <node_api.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "attr_binding.h"
#include "clean_close_binding.h"
#include "entry_binding.h"
#include "fusermount_socket.h"
#include "grant_binding.h"
#include "napi_args.h"
#include "replies.h"
#include "reply_layout.h"
#include "session.h"

namespace fuse3 {
namespace {

// Attribute name prefixes the mount may list (a handful: user., trusted., ...).
constexpr uint32_t kXattrPrefixesMax = 16;

void HandleFinalize(napi_env env, void* data, void* /*hint*/) {
  auto* s = static_cast<Session*>(data);
  if (s->scratchRef() != nullptr) napi_delete_reference(env, s->scratchRef());
  s->HandleGone();
}

bool Flag(Args& a, const char* key, bool dflt) {
  napi_value v = a.Prop(0, key);
  bool out = dflt;
  if (v != nullptr && napi_get_value_bool(a.env, v, &out) != napi_ok) a.Fail(key);
  return out;
}

unsigned Count(Args& a, const char* key, unsigned dflt) {
  napi_value v = a.Prop(0, key);
  uint32_t out = dflt;
  if (v != nullptr && napi_get_value_uint32(a.env, v, &out) != napi_ok) a.Fail(key);
  return out;
}

std::string Text(Args& a, const char* key) {
  napi_value v = a.Prop(0, key);
  if (v == nullptr) {
    a.Fail(key);
    return std::string();
  }
  size_t len = 0;
  if (napi_get_value_string_utf8(a.env, v, nullptr, 0, &len) != napi_ok) {
    a.Fail(key);
    return std::string();
  }
  std::string s(len, '\0');
  napi_get_value_string_utf8(a.env, v, s.data(), len + 1, &len);
  return s;
}

napi_value Mount(napi_env env, napi_callback_info info) {
  Args a(env, info);
  MountOptions o;
  o.mountpoint = Text(a, "mountpoint");
  o.fsname = Text(a, "fsname");
  o.subtype = Text(a, "subtype");
  o.allowOther = Flag(a, "allowOther", false);
  o.defaultPermissions = Flag(a, "defaultPermissions", true);
  o.autoUnmount = Flag(a, "autoUnmount", true);
  o.readOnly = Flag(a, "readOnly", false);
  o.suid = Flag(a, "suid", false);
  o.dev = Flag(a, "dev", false);
  o.posixAcl = Flag(a, "posixAcl", false);
  o.writebackCache = Flag(a, "writebackCache", false);
  o.readdirplus = Flag(a, "readdirplus", true);
  o.maxWriteBytes = Count(a, "maxWriteBytes", o.maxWriteBytes);
  o.maxBackground = Count(a, "maxBackground", o.maxBackground);
  o.congestionThreshold = Count(a, "congestionThreshold", o.congestionThreshold);
  o.spinNs = Count(a, "spinUs", 0) * 1000u;
  napi_value prefixes = a.Prop(0, "xattrPrefixes");
  uint32_t prefixCount = 0;
  if (prefixes != nullptr && napi_get_array_length(env, prefixes, &prefixCount) != napi_ok) a.Fail("xattrPrefixes: expected an array");
  for (uint32_t i = 0; a.ok && i < prefixCount && i < kXattrPrefixesMax; i++) {
    napi_value v;
    napi_get_element(env, prefixes, i, &v);
    size_t len = 0;
    if (napi_get_value_string_utf8(env, v, nullptr, 0, &len) != napi_ok) {
      a.Fail("xattrPrefixes: expected strings");
      break;
    }
    std::string p(len, '\0');
    napi_get_value_string_utf8(env, v, p.data(), len + 1, &len);
    o.xattrPrefixes.push_back(p);
  }
  napi_valuetype fnType;
  if (a.ok && (napi_typeof(env, a.At(1), &fnType) != napi_ok || fnType != napi_function)) a.Fail("onBatch: expected a function");
  bool isTyped = false;
  napi_typedarray_type type;
  size_t length = 0;
  void* data = nullptr;
  if (a.ok && (napi_is_typedarray(env, a.At(2), &isTyped) != napi_ok || !isTyped)) a.Fail("attrScratch: expected a Float64Array");
  if (a.ok) {
    napi_get_typedarray_info(env, a.At(2), &type, &length, &data, nullptr, nullptr);
    if (type != napi_float64_array || length < static_cast<size_t>(kAttrFieldCount) * kDirEntriesPerReplyMax) {
      a.Fail("attrScratch: expected a Float64Array of kAttrFieldCount * kDirEntriesPerReplyMax");
    }
  }
  if (!a.ok) return nullptr;
  std::string error;
  Session* s = Session::Mount(env, o, a.At(1), static_cast<double*>(data), length / kAttrFieldCount, &error);
  if (s == nullptr) {
    napi_throw_error(env, nullptr, error.c_str());
    return nullptr;
  }
  napi_ref keep;  // the scratch must outlive the session (its bytes are read at every reply)
  napi_create_reference(env, a.At(2), 1, &keep);
  s->set_scratchRef(keep);
  napi_value handle;
  napi_create_external(env, s, HandleFinalize, nullptr, &handle);
  return handle;
}

napi_value LoopEnded(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  if (s == nullptr) return nullptr;
  napi_value v;
  napi_get_boolean(env, s->loopEnded(), &v);
  return v;
}

napi_value ConnectionId(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  if (s == nullptr) return nullptr;
  if (!s->ConnectionLive()) {  // ended: its number may already name another mount's connection
    napi_value null;
    napi_get_null(env, &null);
    return null;
  }
  return Int(env, s->connectionId());
}

napi_value Destroy(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  if (s == nullptr) return nullptr;
  if (!s->loopEnded()) {
    napi_throw_error(env, nullptr, "destroy: the request loop is still running (end the connection first)");
    return nullptr;
  }
  return Int(env, static_cast<int64_t>(s->Destroy(env)));
}

// Invalidation runs on a libuv worker thread (napi async work): the kernel may wait there for a
// locked page whose read only the JS thread can answer. The caller keeps the session alive until
// the promise settles (fs/fuse/fuse3.ts awaits it before destroy).
// With names, the entries (parent inos[i], names[i]) instead of inodes.
struct InvalidateWork {
  Session* session;
  std::vector<uint64_t> inos;
  double dropped = 0;
  napi_deferred deferred;
  napi_async_work work;
  std::vector<std::string> names;
};

void InvalidateExecute(napi_env /*env*/, void* data) {
  auto* w = static_cast<InvalidateWork*>(data);
  for (size_t i = 0; i < w->inos.size(); i++) {
    int r = w->names.empty() ? w->session->InvalidateInode(w->inos[i])
                             : w->session->InvalidateEntry(w->inos[i], w->names[i]);
    if (r == 0) w->dropped += 1;
  }
}

void InvalidateComplete(napi_env env, napi_status /*status*/, void* data) {
  auto* w = static_cast<InvalidateWork*>(data);
  napi_value n;
  napi_create_double(env, w->dropped, &n);
  napi_resolve_deferred(env, w->deferred, n);
  napi_delete_async_work(env, w->work);
  delete w;
}

// names: a JS array of exactly `count` strings (names the kernel may cache), or a thrown TypeError.
bool NamesOf(napi_env env, napi_value arr, size_t count, std::vector<std::string>* out) {
  uint32_t n = 0;
  bool isArray = false;
  napi_is_array(env, arr, &isArray);
  if (!isArray || napi_get_array_length(env, arr, &n) != napi_ok || n != count) {
    napi_throw_type_error(env, nullptr, "invalidateEntries: one name per parent inode expected");
    return false;
  }
  out->reserve(n);
  for (uint32_t i = 0; i < n; i++) {
    napi_value v;
    size_t len = 0;
    if (napi_get_element(env, arr, i, &v) != napi_ok ||
        napi_get_value_string_utf8(env, v, nullptr, 0, &len) != napi_ok) {
      napi_throw_type_error(env, nullptr, "invalidateEntries: names must be strings");
      return false;
    }
    std::string s(len, '\0');
    napi_get_value_string_utf8(env, v, s.data(), len + 1, &len);
    out->push_back(std::move(s));
  }
  return true;
}

napi_value InvalidateWith(napi_env env, napi_callback_info info, bool withNames) {
  Args a(env, info);
  Session* s = a.Live(0);
  if (s == nullptr) return nullptr;
  bool typed = false;
  napi_is_typedarray(env, a.At(1), &typed);
  napi_typedarray_type type;
  size_t length = 0;
  void* raw = nullptr;
  if (!typed || napi_get_typedarray_info(env, a.At(1), &type, &length, &raw, nullptr, nullptr) != napi_ok ||
      type != napi_float64_array) {
    napi_throw_type_error(env, nullptr, "invalidate: inode numbers must be a Float64Array");
    return nullptr;
  }
  auto* w = new InvalidateWork{s, {}, 0, nullptr, nullptr, {}};
  const double* inos = static_cast<const double*>(raw);
  w->inos.reserve(length);
  for (size_t i = 0; i < length; i++) w->inos.push_back(static_cast<uint64_t>(inos[i]));
  if (withNames && !NamesOf(env, a.At(2), length, &w->names)) {
    delete w;
    return nullptr;
  }
  napi_value promise, name;
  napi_create_promise(env, &w->deferred, &promise);
  napi_create_string_utf8(env, "chunkfs_fuse3_invalidate", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(env, nullptr, name, InvalidateExecute, InvalidateComplete, w, &w->work);
  napi_queue_async_work(env, w->work);
  return promise;
}

napi_value Invalidate(napi_env env, napi_callback_info info) { return InvalidateWith(env, info, false); }

napi_value InvalidateEntries(napi_env env, napi_callback_info info) { return InvalidateWith(env, info, true); }

// What fs/fuse/unmount-guard.ts hands to the guard process; the caller closes the pidfd once it has.
napi_value UnmountGuardFds(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  if (s == nullptr) return nullptr;
  napi_value out;
  if (s->fusermountSocket() < 0) {
    napi_create_string_utf8(env, "fusermount3's socket not found", NAPI_AUTO_LENGTH, &out);
    return out;
  }
  int pidfd = OpenOwnPidfd();
  if (pidfd < 0) {
    std::string why = std::string("pidfd_open: ") + strerror(errno);
    napi_create_string_utf8(env, why.c_str(), NAPI_AUTO_LENGTH, &out);
    return out;
  }
  napi_create_array_with_length(env, 2, &out);
  napi_set_element(env, out, 0, Int(env, pidfd));
  napi_set_element(env, out, 1, Int(env, s->fusermountSocket()));
  return out;
}

napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"mount", nullptr, Mount, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"loopEnded", nullptr, LoopEnded, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"connectionId", nullptr, ConnectionId, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"destroy", nullptr, Destroy, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"invalidate", nullptr, Invalidate, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"invalidateEntries", nullptr, InvalidateEntries, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"unmountGuardFds", nullptr, UnmountGuardFds, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  // The request row layout this build speaks (request.h): JS refuses an addon built from other sources.
  napi_value fieldCount;
  napi_create_uint32(env, kFieldCount, &fieldCount);
  napi_set_named_property(env, exports, "requestFieldCount", fieldCount);
  DefineReplies(env, exports);
  DefineGrants(env, exports);
  DefineAttrs(env, exports);
  DefineEntries(env, exports);
  DefineCleanCloses(env, exports);
  return exports;
}

}  // namespace
}  // namespace fuse3

NAPI_MODULE(NODE_GYP_MODULE_NAME, fuse3::Init)
