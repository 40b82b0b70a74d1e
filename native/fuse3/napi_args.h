// Argument access for the binding's functions: each getter throws a TypeError naming the argument
// when it has the wrong type (the caller then returns nullptr to JS).
#pragma once
#include <node_api.h>

#include <cstdint>
#include <string>

#include "session.h"

namespace fuse3 {

struct Args {
  napi_env env;
  size_t argc = 0;
  napi_value argv[8];
  bool ok = true;

  Args(napi_env e, napi_callback_info info) : env(e) {
    argc = 8;
    napi_get_cb_info(e, info, &argc, argv, nullptr, nullptr);
  }

  bool Fail(const char* what) {
    if (ok) napi_throw_type_error(env, nullptr, what);
    ok = false;
    return false;
  }

  napi_value At(size_t i) {
    if (i < argc) return argv[i];
    napi_value u;
    napi_get_undefined(env, &u);
    return u;
  }

  double Number(size_t i, const char* what) {
    double v = 0;
    if (ok && napi_get_value_double(env, At(i), &v) != napi_ok) Fail(what);
    return v;
  }

  // A request id: an integer below 2^53 (session.cc).
  uint64_t Id(size_t i) {
    double v = Number(i, "request id: expected a number");
    if (ok && (v < 0 || v != static_cast<double>(static_cast<uint64_t>(v)))) Fail("request id: not an id");
    return static_cast<uint64_t>(v);
  }

  Session* Live(size_t i) {
    void* p = nullptr;
    if (ok && napi_get_value_external(env, At(i), &p) != napi_ok) Fail("session: expected a session handle");
    auto* s = static_cast<Session*>(p);
    if (ok && s->destroyed()) {
      napi_throw_error(env, nullptr, "session: already destroyed");
      ok = false;
    }
    return ok ? s : nullptr;
  }

  // For calls made from inside a change or a flush, where a throw would fail that work: a session
  // already destroyed has nothing left to keep current, so nullptr without an exception.
  Session* LiveOrGone(size_t i) {
    void* p = nullptr;
    if (ok && napi_get_value_external(env, At(i), &p) != napi_ok) Fail("session: expected a session handle");
    auto* s = static_cast<Session*>(p);
    return ok && !s->destroyed() ? s : nullptr;
  }

  std::string String(size_t i, const char* what) {
    size_t len = 0;
    if (!ok || napi_get_value_string_utf8(env, At(i), nullptr, 0, &len) != napi_ok) {
      Fail(what);
      return std::string();
    }
    std::string s(len, '\0');
    napi_get_value_string_utf8(env, At(i), s.data(), len + 1, &len);
    return s;
  }

  bool Bytes(size_t i, const char* what, char** data, size_t* length) {
    void* raw = nullptr;
    bool isBuffer = false;
    if (!ok || napi_is_buffer(env, At(i), &isBuffer) != napi_ok || !isBuffer) return Fail(what);
    napi_get_buffer_info(env, At(i), &raw, length);
    *data = static_cast<char*>(raw);
    return true;
  }

  // Property of an options object, or dflt when absent.
  napi_value Prop(size_t i, const char* key) {
    napi_value v = nullptr;
    bool has = false;
    if (napi_has_named_property(env, At(i), key, &has) != napi_ok || !has) return nullptr;
    napi_get_named_property(env, At(i), key, &v);
    return v;
  }
};

inline napi_value Int(napi_env env, int64_t v) {
  napi_value out;
  napi_create_int64(env, v, &out);
  return out;
}

}  // namespace fuse3
