// The directory attribute table's functions JS calls (attr_table.h; fs/fuse/attr-table.ts), all on
// the JS thread:
//   attrsEnable(session): the table answers from now on
//   attrPut(session) -> boolean: scratch row 0 (reply_layout.h, with its attribute timeout) is a
//     directory's attributes as they are now (false: not a directory, or the table is off)
//   attrRevoke(session, ino): the inode's attributes changed (before any reply that shows it); never
//     throws for a destroyed session
//   attrsClear(session): every entry goes
#include "attr_binding.h"

#include "napi_args.h"
#include "stat_row.h"

namespace fuse3 {
namespace {

napi_value AttrsEnable(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  if (s != nullptr) s->dirAttrs()->Enable();
  return nullptr;
}

napi_value AttrPut(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  if (s == nullptr) return nullptr;
  struct stat st;
  FillStat(s->attrs(), &st);
  napi_value out;
  napi_get_boolean(env, s->dirAttrs()->Put(st, s->attrs()[kAAttrTimeout]), &out);
  return out;
}

// Called from inside the namespace's statements (fs/fuse/attr-table.ts): a session already
// destroyed has no table to keep, and a throw here would abort the change itself.
napi_value AttrRevoke(napi_env env, napi_callback_info info) {
  Args a(env, info);
  double ino = a.Number(1, "ino: expected a number");
  Session* s = a.LiveOrGone(0);
  if (s == nullptr) return nullptr;
  s->dirAttrs()->Revoke(static_cast<uint64_t>(ino));
  s->entries()->Revoke(static_cast<uint64_t>(ino));  // the name table's entries carry attributes too
  return nullptr;
}

napi_value AttrsClear(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  if (s == nullptr) return nullptr;
  s->dirAttrs()->Clear();
  s->entries()->Clear();
  return nullptr;
}

}  // namespace

void DefineAttrs(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"attrsEnable", nullptr, AttrsEnable, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"attrPut", nullptr, AttrPut, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"attrRevoke", nullptr, AttrRevoke, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"attrsClear", nullptr, AttrsClear, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}

}  // namespace fuse3
