// See kill_priv.h. The kernel's side: fs/fuse/inode.c process_init_reply (SB_NOSEC), file.c
// (FUSE_WRITE_KILL_SUIDGID), dir.c fuse_do_setattr (FATTR_KILL_SUIDGID); layouts from linux/fuse.h.
#include "kill_priv.h"

#include <linux/fuse.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

namespace fuse3 {
namespace {

constexpr size_t kInHeaderBytes = sizeof(fuse_in_header);
constexpr size_t kOutHeaderBytes = sizeof(fuse_out_header);

thread_local bool tKillSuidgid = false;
// Set once by UseKillPrivV2 (every session of the process uses the same mapping).
KillPrivState* (*gStateOf)(void* userdata) = nullptr;

uint32_t U32At(const char* p, size_t off) {
  uint32_t v;
  std::memcpy(&v, p + off, sizeof v);
  return v;
}

// The kill bit of one request, from its fixed-size argument (absent or short: no kill).
bool KillBitOf(const char* buf, size_t lengthBytes) {
  uint32_t opcode = U32At(buf, offsetof(fuse_in_header, opcode));
  const char* arg = buf + kInHeaderBytes;
  size_t argBytes = lengthBytes - kInHeaderBytes;
  switch (opcode) {
    case FUSE_WRITE:
      return argBytes >= sizeof(fuse_write_in) &&
             (U32At(arg, offsetof(fuse_write_in, write_flags)) & FUSE_WRITE_KILL_SUIDGID) != 0;
    case FUSE_SETATTR:
      return argBytes >= sizeof(fuse_setattr_in) && (U32At(arg, offsetof(fuse_setattr_in, valid)) & FATTR_KILL_SUIDGID) != 0;
    case FUSE_OPEN:
      return argBytes >= sizeof(fuse_open_in) &&
             (U32At(arg, offsetof(fuse_open_in, open_flags)) & FUSE_OPEN_KILL_SUIDGID) != 0;
    case FUSE_CREATE:
      return argBytes >= sizeof(fuse_create_in) &&
             (U32At(arg, offsetof(fuse_create_in, open_flags)) & FUSE_OPEN_KILL_SUIDGID) != 0;
    default:
      return false;
  }
}

void NoteInit(KillPrivState* st, const char* buf, size_t lengthBytes) {
  if (lengthBytes < kInHeaderBytes + offsetof(fuse_init_in, flags) + sizeof(uint32_t)) return;
  uint32_t offered = U32At(buf + kInHeaderBytes, offsetof(fuse_init_in, flags));
  if ((offered & FUSE_HANDLE_KILLPRIV_V2) == 0) return;  // an older kernel: stay as libfuse left it
  uint64_t unique;
  std::memcpy(&unique, buf + offsetof(fuse_in_header, unique), sizeof unique);
  st->initUnique.store(unique);
}

ssize_t Read(int fd, void* buf, size_t bufBytes, void* userdata) {
  ssize_t n = ::read(fd, buf, bufBytes);
  tKillSuidgid = false;
  if (n < static_cast<ssize_t>(kInHeaderBytes)) return n;
  const char* p = static_cast<const char*>(buf);
  if (U32At(p, offsetof(fuse_in_header, opcode)) == FUSE_INIT) NoteInit(gStateOf(userdata), p, static_cast<size_t>(n));
  else tKillSuidgid = KillBitOf(p, static_cast<size_t>(n));
  return n;
}

// libfuse answers INIT as a header and one fuse_init_out (shorter for old protocol minors).
void PatchInitAnswer(KillPrivState* st, struct iovec* iov, int count) {
  uint64_t want = st->initUnique.load();
  if (want == 0 || count < 2 || iov[0].iov_len < kOutHeaderBytes) return;
  const char* head = static_cast<const char*>(iov[0].iov_base);
  uint64_t unique;
  int32_t error;
  std::memcpy(&unique, head + offsetof(fuse_out_header, unique), sizeof unique);
  std::memcpy(&error, head + offsetof(fuse_out_header, error), sizeof error);
  if (unique != want || error != 0 || iov[1].iov_len < offsetof(fuse_init_out, flags) + sizeof(uint32_t)) return;
  char* out = static_cast<char*>(iov[1].iov_base);
  uint32_t flags = U32At(out, offsetof(fuse_init_out, flags)) | FUSE_HANDLE_KILLPRIV_V2;
  std::memcpy(out + offsetof(fuse_init_out, flags), &flags, sizeof flags);
  st->initUnique.store(0);
  st->negotiated.store(true);
}

ssize_t Writev(int fd, struct iovec* iov, int count, void* userdata) {
  KillPrivState* st = gStateOf(userdata);
  if (st->initUnique.load(std::memory_order_relaxed) != 0) PatchInitAnswer(st, iov, count);
  return ::writev(fd, iov, count);
}

}  // namespace

bool UseKillPrivV2(fuse_session* se, KillPrivState* (*stateOf)(void* userdata)) {
  static const fuse_custom_io kIo = {Writev, Read, nullptr, nullptr};
  gStateOf = stateOf;
  return fuse_session_custom_io(se, &kIo, fuse_session_fd(se)) == 0;
}

bool RequestKillsSuidgid() { return tKillSuidgid; }

}  // namespace fuse3
