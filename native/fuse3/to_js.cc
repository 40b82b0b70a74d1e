// Batch -> JS arguments with a handful of N-API calls per batch rather than an object per request
// (a property set through N-API costs ~0.1 us; a request has up to 20 fields).
#include "to_js.h"

#include <cstdlib>
#include <cstring>

namespace fuse3 {
namespace {

void FreeData(napi_env /*env*/, void* data, void* /*hint*/) { std::free(data); }

napi_value Str(napi_env env, const std::string& s) {
  napi_value v;
  napi_create_string_utf8(env, s.data(), s.size(), &v);
  return v;
}

// The payload as a Buffer: pooled write bytes lent until the answer (ReleaseData), or malloc'd
// bytes the Buffer owns (freed when collected).
napi_value TakeData(napi_env env, Request* r) {
  napi_value v;
  if (r->data == nullptr || r->dataBytes == 0) {
    void* unused;
    napi_create_buffer(env, 0, &unused, &v);
    return v;
  }
  if (r->pool != nullptr) {
    if (napi_create_external_buffer(env, r->dataBytes, r->data, nullptr, nullptr, &v) == napi_ok &&
        napi_create_reference(env, v, 1, &r->dataRef) == napi_ok) {
      return v;
    }
    napi_create_buffer_copy(env, r->dataBytes, r->data, nullptr, &v);
    return v;  // a copy: nothing to take back
  }
  if (napi_create_external_buffer(env, r->dataBytes, r->data, FreeData, nullptr, &v) != napi_ok) {
    napi_create_buffer_copy(env, r->dataBytes, r->data, nullptr, &v);
    return v;  // the copy is JS's; r->data stays with the request
  }
  r->data = nullptr;
  return v;
}

}  // namespace

void ReleaseData(napi_env env, Request* r) {
  if (r->dataRef == nullptr) return;
  napi_value buf, ab;
  if (napi_get_reference_value(env, r->dataRef, &buf) == napi_ok && buf != nullptr &&
      napi_get_typedarray_info(env, buf, nullptr, nullptr, nullptr, &ab, nullptr) == napi_ok &&
      napi_detach_arraybuffer(env, ab) == napi_ok) {
    napi_delete_reference(env, r->dataRef);
    r->dataRef = nullptr;
    return;
  }
  // Not detached: JS may still read the bytes, so they are never reused (a leak, never a wrong read).
  napi_delete_reference(env, r->dataRef);
  r->dataRef = nullptr;
  r->data = nullptr;
}

void CallBatch(napi_env env, napi_value fn, Batch* batch) {
  size_t count = batch->requests.size() + batch->interrupts.size();
  void* raw = nullptr;
  napi_value ab, rows, names, bufs;
  napi_create_arraybuffer(env, count * kFieldCount * sizeof(double) + sizeof(double), &raw, &ab);
  napi_create_typedarray(env, napi_float64_array, count * kFieldCount, ab, 0, &rows);
  napi_create_array_with_length(env, count * 2, &names);
  napi_create_array_with_length(env, count, &bufs);
  auto* nums = static_cast<double*>(raw);
  size_t i = 0;
  for (Request* r : batch->requests) {
    std::memcpy(nums + i * kFieldCount, r->nums, sizeof r->nums);
    if (r->hasName) napi_set_element(env, names, static_cast<uint32_t>(2 * i), Str(env, r->name));
    if (r->hasName2) napi_set_element(env, names, static_cast<uint32_t>(2 * i + 1), Str(env, r->name2));
    if (r->op == Op::kWrite || r->op == Op::kSetxattr) napi_set_element(env, bufs, static_cast<uint32_t>(i), TakeData(env, r));
    i++;
  }
  for (uint64_t id : batch->interrupts) {
    double* row = nums + i * kFieldCount;
    std::memset(row, 0, kFieldCount * sizeof(double));
    row[kFOp] = static_cast<double>(Op::kInterrupt);
    row[kFId] = static_cast<double>(id);
    i++;
  }
  napi_value argv[6];
  argv[0] = rows;
  napi_create_uint32(env, static_cast<uint32_t>(count), &argv[1]);
  argv[2] = names;
  argv[3] = bufs;
  napi_get_boolean(env, batch->ended, &argv[4]);
  napi_create_int32(env, batch->loopResult, &argv[5]);
  napi_value global;
  napi_get_global(env, &global);
  if (napi_call_function(env, global, fn, 6, argv, nullptr) != napi_ok) {
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (pending) {
      napi_value err;
      napi_get_and_clear_last_exception(env, &err);
      napi_fatal_exception(env, err);
    }
  }
}

}  // namespace fuse3
