// The name table's functions JS calls (entry_table.h; fs/fuse/entry-table.ts), all on the JS thread:
//   entriesEnable(session, missingTimeoutS): the table answers from now on; a missing name's answer
//     carries this entry timeout
//   entryPut(session, parent, name) -> boolean: scratch row 0 (reply_layout.h, with its timeouts) is
//     the entry of name in directory parent as it is now (false: refused, or the table is off)
//   entryNamePut(session, parent, name, ino) -> boolean: name in directory parent is inode ino now
//     (answered once the inode's entry is put too)
//   entryDirMade(session, parent, name) -> boolean: scratch row 0 is the directory just made as name
//     in parent: empty, so complete (entry_table.h)
//   entryNameGone(session, parent, name): the name names nothing now (JS removed or moved it)
//   entryAttrsPut(session) -> boolean: scratch row 0 is an inode's entry as it is now (its names kept)
//   entryRevokeName(session, parent, name): the name changed (before any reply that shows it); never
//     throws for a destroyed session
//   entryLookupsTake(session) -> Float64Array [ino, count, ...] of the lookups answered here since
//     the last call, or null when none
// An inode's revocation and clearing the table go through attrRevoke and attrsClear (attr_binding.cc).
#include "entry_binding.h"

#include <cstring>
#include <vector>

#include "napi_args.h"
#include "stat_row.h"

namespace fuse3 {
namespace {

napi_value EntriesEnable(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  double missingTimeoutS = a.Number(1, "missing timeout: expected a number");
  if (a.ok) s->entries()->Enable(missingTimeoutS);
  return nullptr;
}

fuse_entry_param RowEntry(const double* row) {
  fuse_entry_param e;
  std::memset(&e, 0, sizeof e);
  e.ino = static_cast<fuse_ino_t>(row[kAIno]);
  e.generation = static_cast<uint64_t>(row[kAGeneration]);
  FillStat(row, &e.attr);
  e.attr_timeout = row[kAAttrTimeout];
  e.entry_timeout = row[kAEntryTimeout];
  return e;
}

// The arguments every call about one name takes: (session, parent, name), the session live.
struct NameCall {
  Args a;
  Session* s;
  uint64_t parent;
  std::string name;
  NameCall(napi_env env, napi_callback_info info)
      : a(env, info),
        s(a.Live(0)),
        parent(static_cast<uint64_t>(a.Number(1, "parent: expected a number"))),
        name(a.String(2, "name: expected a string")) {}
};

napi_value Bool(napi_env env, bool b) {
  napi_value out;
  napi_get_boolean(env, b, &out);
  return out;
}

napi_value EntryPut(napi_env env, napi_callback_info info) {
  NameCall c(env, info);
  if (!c.a.ok) return nullptr;
  return Bool(env, c.s->entries()->Put(c.parent, c.name, RowEntry(c.s->attrs())));
}

napi_value EntryNamePut(napi_env env, napi_callback_info info) {
  NameCall c(env, info);
  double ino = c.a.Number(3, "ino: expected a number");
  if (!c.a.ok) return nullptr;
  return Bool(env, c.s->entries()->PutName(c.parent, c.name, static_cast<uint64_t>(ino)));
}

napi_value EntryDirMade(napi_env env, napi_callback_info info) {
  NameCall c(env, info);
  if (!c.a.ok) return nullptr;
  return Bool(env, c.s->entries()->DirMade(c.parent, c.name, RowEntry(c.s->attrs())));
}

napi_value EntryNameGone(napi_env env, napi_callback_info info) {
  NameCall c(env, info);
  if (c.a.ok) c.s->entries()->NameGone(c.parent, c.name);
  return nullptr;
}

napi_value EntryAttrsPut(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  if (!a.ok) return nullptr;
  return Bool(env, s->entries()->PutAttrs(RowEntry(s->attrs())));
}

// Called from inside the namespace's operations: a session already destroyed has no table to keep,
// and a throw here would abort the change itself.
napi_value EntryRevokeName(napi_env env, napi_callback_info info) {
  Args a(env, info);
  double parent = a.Number(1, "parent: expected a number");
  std::string name = a.String(2, "name: expected a string");
  Session* s = a.LiveOrGone(0);
  if (s != nullptr) s->entries()->RevokeName(static_cast<uint64_t>(parent), name);
  return nullptr;
}

napi_value EntryLookupsTake(napi_env env, napi_callback_info info) {
  Args a(env, info);
  Session* s = a.Live(0);
  napi_value out;
  napi_get_null(env, &out);
  std::vector<uint64_t> pairs;
  if (s == nullptr || !s->entries()->TakeLookups(&pairs)) return out;
  void* data = nullptr;
  napi_value ab;
  if (napi_create_arraybuffer(env, pairs.size() * sizeof(double), &data, &ab) != napi_ok) return out;
  auto* d = static_cast<double*>(data);
  for (size_t i = 0; i < pairs.size(); i++) d[i] = static_cast<double>(pairs[i]);
  napi_create_typedarray(env, napi_float64_array, pairs.size(), ab, 0, &out);
  return out;
}

}  // namespace

void DefineEntries(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"entriesEnable", nullptr, EntriesEnable, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"entryPut", nullptr, EntryPut, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"entryNamePut", nullptr, EntryNamePut, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"entryDirMade", nullptr, EntryDirMade, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"entryNameGone", nullptr, EntryNameGone, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"entryAttrsPut", nullptr, EntryAttrsPut, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"entryRevokeName", nullptr, EntryRevokeName, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"entryLookupsTake", nullptr, EntryLookupsTake, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}

}  // namespace fuse3
