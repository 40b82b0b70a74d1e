// A mounted libfuse3 low-level session. The JS thread reads requests from /dev/fuse itself when
// libuv polls it readable, up to kReadsPerWakeMax per wake-up, copies each into a slot, hands them
// to JS together and answers each one later with fuse_reply_* through Take(); no request crosses a
// thread. The other dispatch this binding had, libfuse's own reader threads handing requests over
// (fuse_session_loop_mt, -o dispatch=threads), was removed: in two runs with the two alternated
// (scripts/bench/bench-dispatch.sh, 7 Dec, 5 rounds each, medians; docs/benchmarks.md) it cost
// 1.3-3.5x the mount's CPU per request in every phase (one process, run 1: chmod 46.5 vs 30.5 us,
// cold stat 35 vs 10, 4 KiB O_DIRECT reads 42.5 vs 12, writes 30 vs 18) and served fewer requests
// per second in all but chmod with 4 processes (13,840 vs 20,665 chmod/s, 16,798 vs 49,334 reads/s;
// chmod with 4: 1.00x and 1.04x). Its reads could not use read grants (only this thread makes them).
#pragma once
#include <node_api.h>
#include <uv.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "attr_table.h"
#include "clean_closes.h"
#include "entry_table.h"
#include "kill_priv.h"
#include "read_grant.h"
#include "request.h"
#include "write_pool.h"

namespace fuse3 {

struct MountOptions {
  std::string mountpoint;
  std::string fsname;
  std::string subtype;
  bool allowOther = false;
  bool defaultPermissions = true;
  bool autoUnmount = true;
  bool readOnly = false;  // -o ro: the kernel refuses every change (EROFS) before asking us
  // Set-id bits and device files take effect (mount flags without MS_NOSUID / MS_NODEV). libfuse
  // mounts nosuid,nodev unless told otherwise; only root may lift them (fusermount3 ignores them).
  bool suid = false;
  bool dev = false;
  // POSIX ACLs enforced by the kernel (FUSE_CAP_POSIX_ACL), with the umask left to us
  // (FUSE_CAP_DONT_MASK): a default ACL replaces it (fs/acl.ts).
  bool posixAcl = false;
  bool writebackCache = false;
  bool readdirplus = true;
  unsigned maxWriteBytes = 1u << 20;
  unsigned maxBackground = 64;
  unsigned congestionThreshold = 48;
  // after a wake-up whose requests were all answered at once, keep reading /dev/fuse
  // for this long before sleeping (0: never). See kSpinRoundsMax.
  unsigned spinNs = 0;
  // getxattr of a name outside these prefixes is answered ENODATA here, without a JS round trip:
  // the kernel asks for security.capability before every write, and the core stores only these.
  std::vector<std::string> xattrPrefixes;
};

// Requests (and forget/interrupt notices) queued or being answered at once. Kernel requests are
// bounded by the callers' threads plus max_background; past this the JS thread stops reading.
constexpr uint32_t kSlotBits = 12;
constexpr uint32_t kSlotsMax = 1u << kSlotBits;
// Write data copied and not yet answered; past this the JS thread stops reading (max_background
// 64 x 1 MiB writes fit twice).
constexpr size_t kWriteBytesInFlightMax = size_t{128} << 20;
// Requests handed to JS per thread-safe call (the rest follow in the next call).
constexpr size_t kBatchMax = 256;
// requests read from /dev/fuse per wake-up before they are handed to JS together (a
// bound on the loop; more wait in the kernel and wake the poll again at once).
constexpr size_t kReadsPerWakeMax = 64;
// deliveries to make room for the forget notices of one batch forget (each takes a
// slot until delivered) before the rest are dropped (a lost forget keeps an inode known: no harm).
constexpr int kForgetRoomRoundsMax = 64;
// Spin (MountOptions::spinNs): a bound on the empty reads of /dev/fuse per wake-up.
constexpr size_t kSpinRoundsMax = 1u << 16;
// Spin: at most this long per wake-up, however many requests keep coming (the event
// loop's timers and I/O callbacks run when it returns).
constexpr int64_t kSpinTotalNs = 2000000;

class Session {
 public:
  // Mounts and starts the loop; nullptr and *error on failure.
  static Session* Mount(napi_env env, const MountOptions& opts, napi_value onBatch, double* attrScratch,
                        size_t attrScratchRows, std::string* error);

  // The JS thread, inside fuse_session_process_buf (lowlevel_ops.cc).
  void Enqueue(Request* r);
  void Interrupted(uint64_t id);
  const MountOptions& options() const { return opts_; }
  WritePool* writePool() { return &writePool_; }
  KillPrivState* killPriv() { return &killPriv_; }
  ReadGrants* grants() { return &grants_; }
  AttrTable* dirAttrs() { return &dirAttrs_; }
  CleanCloses* cleanCloses() { return &cleanCloses_; }
  EntryTable* entries() { return &entries_; }

  // The JS thread.
  Request* Take(uint64_t id);
  double* attrs() const { return attrs_; }
  napi_ref scratchRef() const { return scratchRef_; }
  void set_scratchRef(napi_ref ref) { scratchRef_ = ref; }
  size_t attrRows() const { return attrRows_; }
  // Kernel connection id (minor device number of the mount), for /sys/fs/fuse/connections/<id>.
  unsigned connectionId() const { return connId_; }
  // False once the kernel ended the connection (unmounted or aborted): its id may be another mount's.
  bool ConnectionLive() const;
  // This end of fusermount3's auto_unmount socket (fusermount_socket.h), or -1 (none, or not found).
  int fusermountSocket() const { return fusermountSocket_; }
  // After the loop ended and every request was answered: unmount leftovers, free libfuse's session.
  // Requests still unanswered are answered EIO first. Returns how many that were.
  size_t Destroy(napi_env env);
  bool destroyed() const { return destroyed_; }
  bool loopEnded() {
    std::lock_guard<std::mutex> lk(mu_);
    return loopEnded_;
  }
  // The JS handle was collected: free this once the thread-safe function is finalized too.
  void HandleGone();
  // Any thread but a libfuse one: drop the kernel's cached pages and attributes of an inode, so the
  // next read reaches the store (fuse_lowlevel_notify_inval_inode). 0, or a negative errno
  // (-ENOENT: the kernel does not hold it). Never on the JS thread: the kernel may wait for a page
  // whose read request only JS can answer.
  int InvalidateInode(uint64_t ino);
  // The kernel forgets the name `name` in directory parent, so its next walk asks again
  // (fuse_lowlevel_notify_inval_entry). 0, or a negative errno (-ENOENT: not cached).
  int InvalidateEntry(uint64_t parent, const std::string& name);

 private:
  Session(const MountOptions& opts) : opts_(opts), slots_(kSlotsMax, nullptr), gens_(kSlotsMax, 0),
                                      delivered_(kSlotsMax, false), earlyInterrupt_(kSlotsMax, false) {}
  static void CallJs(napi_env env, napi_value fn, void* context, void* data);
  static void TsfnFinalized(napi_env env, void* data, void* hint);
  bool Start(napi_env env, napi_value onBatch, std::string* error);
  void Deliver(napi_env env, napi_value fn);
  void Arm();
  void Release(uint32_t slot);
  // Reading /dev/fuse, all on the JS thread.
 public:
  void ResumeIfPaused();
 private:
  bool StartPoll(napi_env env, napi_value onBatch, std::string* error);
  static void OnReadable(uv_poll_t* handle, int status, int events);
  static void OnPrepare(uv_prepare_t* handle);
  void ReadRequests();
  void Spin();
  size_t ReadBatch();
  bool AllAnswered();
  bool HasRoom();
  void EndPoll(int result);
  void ClosePoll();
  void DeliverNow();
  void MaybeDelete();

  MountOptions opts_;
  WritePool writePool_;
  KillPrivState killPriv_;
  ReadGrants grants_;
  AttrTable dirAttrs_;
  CleanCloses cleanCloses_;
  EntryTable entries_;
  fuse_session* se_ = nullptr;
  napi_threadsafe_function tsfn_ = nullptr;
  double* attrs_ = nullptr;
  size_t attrRows_ = 0;
  napi_ref scratchRef_ = nullptr;
  unsigned connId_ = 0;
  int fusermountSocket_ = -1;
  bool destroyed_ = false;
  bool handleGone_ = false;
  bool tsfnGone_ = false;

  // Reading state.
  napi_env env_ = nullptr;
  napi_ref onBatchRef_ = nullptr;
  napi_async_context asyncCtx_ = nullptr;
  uv_poll_t poll_{};
  // Runs once right before the event loop would sleep, after an answer given later than its
  // wake-up (a disk wait, an fsync) left nothing owed: the spin of ReadRequests then (see Take).
  uv_prepare_t prepare_{};
  bool prepareClosed_ = true;
  bool spinWanted_ = false;
  fuse_buf buf_{};
  bool pollOpen_ = false;
  bool pollPaused_ = false;
  bool pollClosed_ = true;
  bool delivering_ = false;
  // True while ReadRequests runs on the JS thread: it delivers what it read itself (DeliverNow at
  // its end), so Arm skips the thread-safe wake-up; measured: one eventfd write per request and
  // an extra event-loop turn per wake-up before (strace of fio random reads).
  std::atomic<bool> reading_{false};

  std::mutex mu_;
  std::vector<Request*> slots_;
  std::vector<uint64_t> gens_;
  std::vector<bool> delivered_;
  std::vector<bool> earlyInterrupt_;
  std::vector<uint32_t> freeSlots_;
  std::deque<Request*> pending_;
  std::vector<uint64_t> interrupts_;
  size_t writeBytes_ = 0;
  bool armed_ = false;
  bool loopEnded_ = false;
  bool endDelivered_ = false;
  int loopResult_ = 0;
};

}  // namespace fuse3
