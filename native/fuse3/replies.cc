// fuse_reply_* for each reply shape. Attributes come from the session's scratch rows
// (reply_layout.h); the request is freed right after its reply.
#include "replies.h"

#include <cstring>
#include <memory>
#include <vector>

#include "napi_args.h"
#include "reply_layout.h"
#include "stat_row.h"
#include "time_split.h"
#include "to_js.h"

namespace fuse3 {
namespace {

// Directory entry names as stored (at most NAME_MAX = 255 bytes; room to spare).
constexpr size_t kNameBytesMax = 4096;
// A directory reply is at most what the kernel asked for; more is refused.
constexpr size_t kDirReplyBytesMax = size_t{1} << 20;

void FillEntry(const double* a, fuse_entry_param* e) {
  std::memset(e, 0, sizeof *e);
  e->ino = static_cast<fuse_ino_t>(a[kAIno]);
  e->generation = static_cast<uint64_t>(a[kAGeneration]);
  FillStat(a, &e->attr);
  e->attr_timeout = a[kAAttrTimeout];
  e->entry_timeout = a[kAEntryTimeout];
}

// open/create reply flags (fs/fuse/fuse3-abi.ts OPEN_*).
fuse_file_info FileInfo(double fh, double flags) {
  fuse_file_info fi;
  std::memset(&fi, 0, sizeof fi);
  auto bits = static_cast<unsigned>(flags);
  fi.fh = static_cast<uint64_t>(fh);
  fi.keep_cache = (bits & 1) != 0;
  fi.direct_io = (bits & 2) != 0;
  fi.cache_readdir = (bits & 4) != 0;
  fi.noflush = (bits & 8) != 0;
  return fi;
}

// Takes the request named by argv[1] from argv[0]'s session; nullptr (and a thrown error) if none.
struct Reply {
  Args a;
  Session* s = nullptr;
  std::unique_ptr<Request> r;

  Reply(napi_env env, napi_callback_info info) : a(env, info) {
    s = a.Live(0);
    uint64_t id = a.Id(1);
    if (!a.ok) return;
    r.reset(s->Take(id));
    if (r == nullptr) {
      napi_throw_error(env, nullptr, "no such request (answered twice?)");
      a.ok = false;
      return;
    }
    ReleaseData(env, r.get());
  }
  // The answer freed a slot: the JS thread reads again if it had stopped for room (session.h).
  ~Reply() {
    if (s != nullptr && r != nullptr) s->ResumeIfPaused();
  }
  // Answers EIO when the other arguments were bad, so the request is never left waiting.
  bool Ready() {
    if (a.ok) return true;
    if (r != nullptr) fuse_reply_err(r->req, EIO);
    return false;
  }
};

napi_value ReplyErr(napi_env env, napi_callback_info info) {
  Reply p(env, info);
  double err = p.a.Number(2, "errno: expected a number");
  if (!p.Ready()) return nullptr;
  return Int(env, fuse_reply_err(p.r->req, static_cast<int>(err)));
}

// (session, id, keep): keep true: a LOOKUP's entry the name table may keep (entry_table.h).
napi_value ReplyEntry(napi_env env, napi_callback_info info) {
  Reply p(env, info);
  bool keep = false;
  if (p.a.argc > 2) napi_get_value_bool(env, p.a.At(2), &keep);
  if (!p.Ready()) return nullptr;
  fuse_entry_param e;
  FillEntry(p.s->attrs(), &e);
  // A directory found by name: its attributes as JS answered them (attr_table.h).
  if (p.r->op == Op::kLookup && e.ino != 0) p.s->dirAttrs()->FillIfUnchanged(p.r->attrStamp, e.attr, e.attr_timeout);
  if (keep && p.r->op == Op::kLookup && e.ino != 0 && p.r->hasName) {
    p.s->entries()->PutIfUnchanged(p.r->entryStamp, static_cast<uint64_t>(p.r->nums[kFIno]), p.r->name, e);
  }
  return Int(env, fuse_reply_entry(p.r->req, &e));
}

// (session, id, clean): clean true: after a SETATTR, the file's close needs nothing from JS (clean_closes.h).
napi_value ReplyAttr(napi_env env, napi_callback_info info) {
  Reply p(env, info);
  bool clean = false;
  if (p.a.argc > 2) napi_get_value_bool(env, p.a.At(2), &clean);
  if (!p.Ready()) return nullptr;
  if (clean && p.r->op == Op::kSetattr) {
    p.s->cleanCloses()->MarkIfUnchanged(p.r->cleanStamp, static_cast<uint64_t>(p.r->nums[kFIno]));
  }
  struct stat st;
  FillStat(p.s->attrs(), &st);
  const double timeoutS = p.s->attrs()[kAAttrTimeout];
  if (p.r->op == Op::kGetattr) p.s->dirAttrs()->FillIfUnchanged(p.r->attrStamp, st, timeoutS);  // attr_table.h
  return Int(env, fuse_reply_attr(p.r->req, &st, timeoutS));
}

napi_value ReplyOpen(napi_env env, napi_callback_info info) {
  Reply p(env, info);
  double fh = p.a.Number(2, "fh: expected a number");
  double flags = p.a.Number(3, "open flags: expected a number");
  if (!p.Ready()) return nullptr;
  fuse_file_info fi = FileInfo(fh, flags);
  return Int(env, fuse_reply_open(p.r->req, &fi));
}

napi_value ReplyCreate(napi_env env, napi_callback_info info) {
  Reply p(env, info);
  double fh = p.a.Number(2, "fh: expected a number");
  double flags = p.a.Number(3, "open flags: expected a number");
  if (!p.Ready()) return nullptr;
  fuse_entry_param e;
  FillEntry(p.s->attrs(), &e);
  fuse_file_info fi = FileInfo(fh, flags);
  if ((static_cast<unsigned>(flags) & kOpenCleanBit) != 0) p.s->cleanCloses()->MarkIfUnchanged(p.r->cleanStamp, e.ino);
  return Int(env, fuse_reply_create(p.r->req, &e, &fi));
}

// (session, id, count, clean): clean true: the file's close needs nothing from JS (clean_closes.h).
napi_value ReplyWrite(napi_env env, napi_callback_info info) {
  Reply p(env, info);
  double count = p.a.Number(2, "count: expected a number");
  bool clean = false;
  if (p.a.argc > 3) napi_get_value_bool(env, p.a.At(3), &clean);
  if (!p.Ready()) return nullptr;
  if (clean) p.s->cleanCloses()->MarkIfUnchanged(p.r->cleanStamp, static_cast<uint64_t>(p.r->nums[kFIno]));
  return Int(env, fuse_reply_write(p.r->req, static_cast<size_t>(count)));
}

// (session, id, buffer, length): the first length bytes of buffer (read data, xattr bytes).
napi_value ReplyBuf(napi_env env, napi_callback_info info) {
  Reply p(env, info);
  char* data = nullptr;
  size_t size = 0;
  p.a.Bytes(2, "data: expected a Buffer", &data, &size);
  double length = p.a.Number(3, "length: expected a number");
  if (p.a.ok && (length < 0 || length > static_cast<double>(size))) p.a.Fail("length: beyond the buffer");
  if (!p.Ready()) return nullptr;
  return Int(env, fuse_reply_buf(p.r->req, data, static_cast<size_t>(length)));
}

napi_value ReplyReadlink(napi_env env, napi_callback_info info) {
  Reply p(env, info);
  std::string target = p.a.String(2, "target: expected a string");
  if (!p.Ready()) return nullptr;
  return Int(env, fuse_reply_readlink(p.r->req, target.c_str()));
}

napi_value ReplyXattrSize(napi_env env, napi_callback_info info) {
  Reply p(env, info);
  double size = p.a.Number(2, "size: expected a number");
  if (!p.Ready()) return nullptr;
  return Int(env, fuse_reply_xattr(p.r->req, static_cast<size_t>(size)));
}

// (session, id, offset): the answer to lseek(SEEK_DATA / SEEK_HOLE).
napi_value ReplyLseek(napi_env env, napi_callback_info info) {
  Reply p(env, info);
  double off = p.a.Number(2, "offset: expected a number");
  if (p.a.ok && off < 0) p.a.Fail("offset: negative");
  if (!p.Ready()) return nullptr;
  return Int(env, fuse_reply_lseek(p.r->req, static_cast<off_t>(off)));
}

napi_value ReplyStatfs(napi_env env, napi_callback_info info) {
  Reply p(env, info);
  if (!p.Ready()) return nullptr;
  const double* a = p.s->attrs();
  struct statvfs st;
  std::memset(&st, 0, sizeof st);
  st.f_bsize = static_cast<unsigned long>(a[kSBsize]);
  st.f_frsize = static_cast<unsigned long>(a[kSFrsize]);
  st.f_blocks = static_cast<fsblkcnt_t>(a[kSBlocks]);
  st.f_bfree = static_cast<fsblkcnt_t>(a[kSBfree]);
  st.f_bavail = static_cast<fsblkcnt_t>(a[kSBavail]);
  st.f_files = static_cast<fsfilcnt_t>(a[kSFiles]);
  st.f_ffree = static_cast<fsfilcnt_t>(a[kSFfree]);
  st.f_favail = static_cast<fsfilcnt_t>(a[kSFavail]);
  st.f_fsid = static_cast<unsigned long>(a[kSFsid]);
  st.f_flag = static_cast<unsigned long>(a[kSFlag]);
  st.f_namemax = static_cast<unsigned long>(a[kSNamemax]);
  return Int(env, fuse_reply_statfs(p.r->req, &st));
}

// (session, id, plus, sizeBytes, names, count): entries 0..count-1 from the scratch rows (with
// kADirOff, the offset of the entry after each), packed until sizeBytes is full. Returns how many
// were packed: for readdirplus each packed entry counts as a lookup of its inode.
napi_value ReplyDir(napi_env env, napi_callback_info info) {
  Reply p(env, info);
  bool plus = false;
  if (p.a.ok && napi_get_value_bool(env, p.a.At(2), &plus) != napi_ok) p.a.Fail("plus: expected a boolean");
  double sizeBytes = p.a.Number(3, "size: expected a number");
  double count = p.a.Number(5, "count: expected a number");
  if (p.a.ok && (sizeBytes < 0 || sizeBytes > kDirReplyBytesMax)) p.a.Fail("size: out of range");
  if (p.a.ok && (count < 0 || count > static_cast<double>(p.s->attrRows()))) p.a.Fail("count: beyond the scratch rows");
  if (!p.Ready()) return nullptr;
  std::vector<char> buf(static_cast<size_t>(sizeBytes));
  size_t pos = 0;
  int packed = 0;
  char name[kNameBytesMax + 1];
  for (int i = 0; i < static_cast<int>(count); i++) {
    napi_value v;
    size_t len = 0;
    napi_get_element(env, p.a.At(4), static_cast<uint32_t>(i), &v);
    if (napi_get_value_string_utf8(env, v, name, sizeof name, &len) != napi_ok) break;
    const double* row = p.s->attrs() + static_cast<size_t>(i) * kAttrFieldCount;
    auto off = static_cast<off_t>(row[kADirOff]);
    size_t need;
    if (plus) {
      fuse_entry_param e;
      FillEntry(row, &e);
      // '.' and '..' carry no inode reference for the kernel (it skips them; libfuse's
      // documentation excludes them from the lookup count): nodeid 0, st_ino kept for d_ino.
      if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) e.ino = 0;
      need = fuse_add_direntry_plus(p.r->req, buf.data() + pos, buf.size() - pos, name, &e, off);
    } else {
      struct stat st;
      FillStat(row, &st);
      need = fuse_add_direntry(p.r->req, buf.data() + pos, buf.size() - pos, name, &st, off);
    }
    if (need > buf.size() - pos) break;
    pos += need;
    packed++;
  }
  int rc = fuse_reply_buf(p.r->req, buf.data(), pos);
  return Int(env, rc < 0 ? rc : packed);
}

}  // namespace

void DefineReplies(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"replyErr", nullptr, ReplyErr, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"replyEntry", nullptr, ReplyEntry, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"replyAttr", nullptr, ReplyAttr, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"replyOpen", nullptr, ReplyOpen, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"replyCreate", nullptr, ReplyCreate, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"replyWrite", nullptr, ReplyWrite, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"replyBuf", nullptr, ReplyBuf, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"replyReadlink", nullptr, ReplyReadlink, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"replyXattrSize", nullptr, ReplyXattrSize, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"replyStatfs", nullptr, ReplyStatfs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"replyDir", nullptr, ReplyDir, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"replyLseek", nullptr, ReplyLseek, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}

}  // namespace fuse3
