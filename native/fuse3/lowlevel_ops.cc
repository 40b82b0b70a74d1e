// Request copying for every low-level op chunkfs serves (session.h). Ops left out are answered by
// libfuse or the kernel themselves: access (default_permissions), POSIX and flock locks (the
// kernel keeps them locally unless the file system asks for them), ioctl, poll, bmap.
#include "lowlevel_ops.h"

#include <fcntl.h>

#include <cstring>

#include "kill_priv.h"
#include "session.h"
#include "time_split.h"

namespace fuse3 {
namespace {

Session* Of(fuse_req_t req) { return static_cast<Session*>(fuse_req_userdata(req)); }

Request* New(fuse_req_t req, Op op, fuse_ino_t ino) {
  auto* r = new Request();
  r->op = op;
  r->req = req;
  const fuse_ctx* c = fuse_req_ctx(req);
  r->nums[kFOp] = static_cast<double>(op);
  r->nums[kFIno] = static_cast<double>(ino);
  r->nums[kFUid] = c->uid;
  r->nums[kFGid] = c->gid;
  r->nums[kFPid] = c->pid;
  r->nums[kFUmask] = c->umask;
  r->nums[kFFh] = kNoFh;
  r->nums[kFKillSuidgid] = RequestKillsSuidgid() ? 1 : 0;  // read on this thread just before
  if (MayChangeData(op)) Of(req)->grants()->Bump();  // before any later read can be served (read_grant.h)
  r->attrStamp = Of(req)->dirAttrs()->Stamp();
  Of(req)->cleanCloses()->Arrived(op, ino);
  r->cleanStamp = Of(req)->cleanCloses()->Stamp();
  r->entryStamp = Of(req)->entries()->Stamp();
  Of(req)->entries()->Arrived(op, ino);
  return r;
}

// A request that may change the name (parent, name): the name table forgets it first (entry_table.h).
void ChangesName(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Of(req)->entries()->ArrivedName(parent, name);
}

Request* Named(fuse_req_t req, Op op, fuse_ino_t parent, const char* name) {
  Request* r = New(req, op, parent);
  r->name = name;
  r->hasName = true;
  return r;
}

void WithFile(Request* r, const fuse_file_info* fi) {
  if (fi == nullptr) return;
  r->nums[kFFh] = static_cast<double>(fi->fh);
  r->nums[kFFlags] = fi->flags;
}

void Queue(Request* r) { Of(r->req)->Enqueue(r); }

void Init(void* userdata, fuse_conn_info* conn) {
  const MountOptions& o = static_cast<Session*>(userdata)->options();
  conn->max_write = o.maxWriteBytes;
  conn->max_background = o.maxBackground;
  conn->congestion_threshold = o.congestionThreshold;
  conn->time_gran = 1;  // nanosecond timestamps
  if (o.writebackCache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE)) conn->want |= FUSE_CAP_WRITEBACK_CACHE;
  if (!o.readdirplus) conn->want &= ~(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
  // Not v1 (the kernel would leave every set-id drop to us without saying when); v2 is asked for
  // below libfuse (kill_priv.h): the kernel marks each request that must drop them.
  conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
  if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
  // open_by_handle_at / NFS export of an inode the kernel no longer caches: it looks up "." in
  // the handle's nodeid (and ".." for a directory's parent), which fs/ops-names.ts answers.
  if (conn->capable & FUSE_CAP_EXPORT_SUPPORT) conn->want |= FUSE_CAP_EXPORT_SUPPORT;
  // Every write reaches us through this kernel, which keeps its page cache right itself; with
  // auto_inval_data each new mtime seen by a getattr dropped the whole file's cached pages (the
  // sqlite test: 24,455 reads of pages it had just written).
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
  // Asynchronous direct I/O (AIO O_DIRECT) completes from the answer to its last request, and the
  // kernel then never drops the pages a buffered read cached while the write was in flight: stale
  // bytes after the write completed (xfstests generic/451, docs/xfstests.md). Without async_dio the
  // kernel does such I/O synchronously and drops those pages itself after the write, as it does
  // for every synchronous direct write; nothing of ours waits on the kernel.
  conn->want &= ~FUSE_CAP_ASYNC_DIO;
  if (o.posixAcl && (conn->capable & FUSE_CAP_POSIX_ACL) && (conn->capable & FUSE_CAP_DONT_MASK)) {
    conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
  }
}

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  // A name JS put in the name table (entry_table.h); this is the JS thread.
  if (Of(req)->entries()->Serve(req, parent, name)) return;
  Queue(Named(req, Op::kLookup, parent, name));
}

void Notice(Session* s, fuse_ino_t ino, uint64_t nlookup) {
  auto* r = new Request();
  r->op = Op::kForget;
  r->nums[kFOp] = static_cast<double>(Op::kForget);
  r->nums[kFIno] = static_cast<double>(ino);
  r->nums[kFSize] = static_cast<double>(nlookup);
  r->nums[kFFh] = kNoFh;
  s->Enqueue(r);
}

void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  Session* s = Of(req);
  s->cleanCloses()->Arrived(Op::kForget, ino);
  fuse_reply_none(req);
  Notice(s, ino, nlookup);
}

void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  Session* s = Of(req);
  fuse_reply_none(req);  // forgets point into the receive buffer, valid until we return
  for (size_t i = 0; i < count; i++) {
    s->cleanCloses()->Arrived(Op::kForget, forgets[i].ino);
    Notice(s, forgets[i].ino, forgets[i].nlookup);
  }
}

void Getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  // A directory's attributes JS keeps current here (attr_table.h); this is the JS thread.
  if (Of(req)->dirAttrs()->Serve(req, ino)) return;
  Request* r = New(req, Op::kGetattr, ino);
  WithFile(r, fi);
  Queue(r);
}

void Setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int toSet, fuse_file_info* fi) {
  Request* r = New(req, Op::kSetattr, ino);
  WithFile(r, fi);
  r->nums[kFToSet] = toSet;
  r->nums[kFMode] = attr->st_mode;
  r->nums[kFAttrUid] = attr->st_uid;
  r->nums[kFAttrGid] = attr->st_gid;
  r->nums[kFSize] = static_cast<double>(attr->st_size);
  SplitTime(attr->st_atim, &r->nums[kFAtimeS], &r->nums[kFAtimeNs]);
  SplitTime(attr->st_mtim, &r->nums[kFMtimeS], &r->nums[kFMtimeNs]);
  SplitTime(attr->st_ctim, &r->nums[kFCtimeS], &r->nums[kFCtimeNs]);
  Queue(r);
}

void Readlink(fuse_req_t req, fuse_ino_t ino) { Queue(New(req, Op::kReadlink, ino)); }

void Mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  ChangesName(req, parent, name);
  Request* r = Named(req, Op::kMknod, parent, name);
  r->nums[kFMode] = mode;
  r->nums[kFRdev] = static_cast<double>(rdev);
  Queue(r);
}

void Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  ChangesName(req, parent, name);
  Request* r = Named(req, Op::kMkdir, parent, name);
  r->nums[kFMode] = mode;
  Queue(r);
}

void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  ChangesName(req, parent, name);
  Queue(Named(req, Op::kUnlink, parent, name));
}

void Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  ChangesName(req, parent, name);
  Queue(Named(req, Op::kRmdir, parent, name));
}

void Symlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name) {
  ChangesName(req, parent, name);
  Request* r = Named(req, Op::kSymlink, parent, name);
  r->name2 = link;
  r->hasName2 = true;
  Queue(r);
}

void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newParent, const char* newName,
            unsigned int flags) {
  ChangesName(req, parent, name);
  ChangesName(req, newParent, newName);
  Request* r = Named(req, Op::kRename, parent, name);
  r->nums[kFIno2] = static_cast<double>(newParent);
  r->name2 = newName;
  r->hasName2 = true;
  r->nums[kFFlags] = flags;
  Queue(r);
}

void Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newParent, const char* newName) {
  ChangesName(req, newParent, newName);
  Request* r = New(req, Op::kLink, ino);
  r->nums[kFIno2] = static_cast<double>(newParent);
  r->name2 = newName;
  r->hasName2 = true;
  Queue(r);
}

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Request* r = New(req, Op::kOpen, ino);
  r->nums[kFFlags] = fi->flags;
  if (ChangesData(Op::kOpen, fi->flags)) Of(req)->grants()->Bump();  // with O_TRUNC (request.h)
  Queue(r);
}

void Read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  Session* s = Of(req);
  // This is the JS thread, which alone makes and voids grants (read_grant.h).
  if (s->grants()->Serve(req, ino, size, off)) return;
  Request* r = New(req, Op::kRead, ino);
  WithFile(r, fi);
  r->nums[kFSize] = static_cast<double>(size);
  r->nums[kFOff] = static_cast<double>(off);
  Queue(r);
}

void Write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  Request* r = New(req, Op::kWrite, ino);
  WithFile(r, fi);
  r->nums[kFFlags] = fi->writepage;  // a write-back of cached pages: the caller fields are not valid
  r->nums[kFSize] = static_cast<double>(size);
  r->nums[kFOff] = static_cast<double>(off);
  if (size > 0) {
    r->pool = Of(req)->writePool();
    r->data = r->pool->Take(size);
    r->dataBytes = size;
    if (r->data == nullptr) {
      delete r;
      fuse_reply_err(req, ENOMEM);
      return;
    }
    std::memcpy(r->data, buf, size);
  }
  Queue(r);
}

void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  // A file made by CREATE and given nothing since (clean_closes.h); this is the JS thread.
  if (Of(req)->cleanCloses()->Serve(req, ino)) return;
  Request* r = New(req, Op::kFlush, ino);
  WithFile(r, fi);
  Queue(r);
}

void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Request* r = New(req, Op::kRelease, ino);
  WithFile(r, fi);
  Queue(r);
}

void Fsync(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) {
  Request* r = New(req, Op::kFsync, ino);
  WithFile(r, fi);
  r->nums[kFFlags] = datasync;
  Queue(r);
}

void Opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Request* r = New(req, Op::kOpendir, ino);
  r->nums[kFFlags] = fi->flags;
  Queue(r);
}

void Listing(fuse_req_t req, Op op, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  Request* r = New(req, op, ino);
  WithFile(r, fi);
  r->nums[kFSize] = static_cast<double>(size);
  r->nums[kFOff] = static_cast<double>(off);
  Queue(r);
}

void Readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  Listing(req, Op::kReaddir, ino, size, off, fi);
}

void Readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  Listing(req, Op::kReaddirplus, ino, size, off, fi);
}

void Releasedir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Request* r = New(req, Op::kReleasedir, ino);
  WithFile(r, fi);
  Queue(r);
}

void Fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi) {
  Request* r = New(req, Op::kFsyncdir, ino);
  WithFile(r, fi);
  r->nums[kFFlags] = datasync;
  Queue(r);
}

void Statfs(fuse_req_t req, fuse_ino_t ino) { Queue(New(req, Op::kStatfs, ino)); }

void Setxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size, int flags) {
  Request* r = Named(req, Op::kSetxattr, ino, name);
  r->nums[kFFlags] = flags;
  r->nums[kFSize] = static_cast<double>(size);
  if (size > 0) {
    r->data = static_cast<char*>(std::malloc(size));
    if (r->data == nullptr) {
      delete r;
      fuse_reply_err(req, ENOMEM);
      return;
    }
    std::memcpy(r->data, value, size);
    r->dataBytes = size;
  }
  Queue(r);
}

bool Stored(const MountOptions& o, const char* name) {
  if (o.xattrPrefixes.empty()) return true;  // no list given: every name goes to JS
  for (const std::string& p : o.xattrPrefixes) {
    if (std::strncmp(name, p.c_str(), p.size()) == 0) return true;
  }
  return false;
}

void Getxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  if (!Stored(Of(req)->options(), name)) {
    fuse_reply_err(req, ENODATA);
    return;
  }
  Request* r = Named(req, Op::kGetxattr, ino, name);
  r->nums[kFSize] = static_cast<double>(size);
  Queue(r);
}

void Listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  Request* r = New(req, Op::kListxattr, ino);
  r->nums[kFSize] = static_cast<double>(size);
  Queue(r);
}

void Removexattr(fuse_req_t req, fuse_ino_t ino, const char* name) { Queue(Named(req, Op::kRemovexattr, ino, name)); }

void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  ChangesName(req, parent, name);
  Request* r = Named(req, Op::kCreate, parent, name);
  r->nums[kFMode] = mode;
  r->nums[kFFlags] = fi->flags;
  Queue(r);
}

void Fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length, fuse_file_info* fi) {
  Request* r = New(req, Op::kFallocate, ino);
  WithFile(r, fi);
  r->nums[kFFlags] = mode;
  r->nums[kFOff] = static_cast<double>(offset);
  r->nums[kFSize] = static_cast<double>(length);
  Queue(r);
}

// SEEK_DATA / SEEK_HOLE (the kernel answers SEEK_SET/CUR/END itself): whence in flags.
void Lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info* fi) {
  Request* r = New(req, Op::kLseek, ino);
  WithFile(r, fi);
  r->nums[kFOff] = static_cast<double>(off);
  r->nums[kFFlags] = whence;
  Queue(r);
}

}  // namespace

fuse_lowlevel_ops LowlevelOps() {
  fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof ops);
  ops.init = Init;
  ops.lookup = Lookup;
  ops.forget = Forget;
  ops.forget_multi = ForgetMulti;
  ops.getattr = Getattr;
  ops.setattr = Setattr;
  ops.readlink = Readlink;
  ops.mknod = Mknod;
  ops.mkdir = Mkdir;
  ops.unlink = Unlink;
  ops.rmdir = Rmdir;
  ops.symlink = Symlink;
  ops.rename = Rename;
  ops.link = Link;
  ops.open = Open;
  ops.read = Read;
  ops.write = Write;
  ops.flush = Flush;
  ops.release = Release;
  ops.fsync = Fsync;
  ops.opendir = Opendir;
  ops.readdir = Readdir;
  ops.readdirplus = Readdirplus;
  ops.releasedir = Releasedir;
  ops.fsyncdir = Fsyncdir;
  ops.statfs = Statfs;
  ops.setxattr = Setxattr;
  ops.getxattr = Getxattr;
  ops.listxattr = Listxattr;
  ops.removexattr = Removexattr;
  ops.create = Create;
  ops.fallocate = Fallocate;
  ops.lseek = Lseek;
  return ops;
}

}  // namespace fuse3
