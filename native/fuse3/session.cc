// Session lifecycle and the request queue of the JS thread (see session.h). Teardown order
// (fs/fuse/fuse3.ts drives it): end the kernel connection (lazy unmount, or abort), wait for the
// loop's end notice, answer every request, Destroy. The /dev/fuse descriptor is closed only there,
// after the poll was closed: a closed descriptor number can be reused by any open() in this process
// (libfuse's own fuse_session_unmount closes it, so it only runs in Destroy).
#include "session.h"

#include <fcntl.h>
#include <poll.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "clock.h"
#include "fusermount_socket.h"
#include "lowlevel_ops.h"
#include "to_js.h"

namespace fuse3 {
namespace {

constexpr uint64_t kSlotMask = kSlotsMax - 1;
// Request ids must stay exact in a double: generation bits above the slot bits, below 2^53.
constexpr uint64_t kGenerationMax = (uint64_t{1} << (53 - kSlotBits)) - 1;
// Lines of /proc/self/mountinfo read to find the new mount (a machine has far fewer mounts).
constexpr int kMountinfoLinesMax = 1 << 20;

void OnInterrupt(fuse_req_t req, void* data) {
  static_cast<Session*>(fuse_req_userdata(req))->Interrupted(reinterpret_cast<uintptr_t>(data));
}

// mountinfo escapes ' ', '\t', '\n' and '\\' in paths as octal.
std::string EscapeMountPath(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\') {
      char buf[8];
      snprintf(buf, sizeof buf, "\\%03o", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// The minor device number of the newest mount at path, from mountinfo (a stat() of the mount
// point would be a request to this very session, whose loop is not running yet).
unsigned MountMinor(const std::string& path) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  std::string want = EscapeMountPath(path);
  unsigned minor = 0;
  for (int i = 0; i < kMountinfoLinesMax && std::getline(in, line); i++) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    if (point != want) continue;
    size_t colon = dev.find(':');
    if (colon != std::string::npos) minor = static_cast<unsigned>(std::stoul(dev.substr(colon + 1)));
  }
  return minor;
}

std::string OptionString(const MountOptions& o) {
  std::string s = "fsname=" + o.fsname + ",subtype=" + o.subtype;
  if (o.allowOther) s += ",allow_other";
  if (o.defaultPermissions) s += ",default_permissions";
  if (o.autoUnmount) s += ",auto_unmount";
  if (o.readOnly) s += ",ro";
  s += o.suid ? ",suid" : ",nosuid";
  s += o.dev ? ",dev" : ",nodev";
  return s;
}

}  // namespace

Session* Session::Mount(napi_env env, const MountOptions& opts, napi_value onBatch, double* attrScratch,
                        size_t attrScratchRows, std::string* error) {
  auto* s = new Session(opts);
  for (uint32_t i = kSlotsMax; i-- > 0;) s->freeSlots_.push_back(i);
  s->attrs_ = attrScratch;
  s->attrRows_ = attrScratchRows;
  if (!s->Start(env, onBatch, error)) {
    delete s;
    return nullptr;
  }
  return s;
}

bool Session::Start(napi_env env, napi_value onBatch, std::string* error) {
  std::string prog = "chunkfs";
  std::string dashO = "-o";
  std::string optText = OptionString(opts_);
  char* argv[] = {prog.data(), dashO.data(), optText.data()};
  fuse_args args = FUSE_ARGS_INIT(3, argv);
  fuse_lowlevel_ops ops = LowlevelOps();
  se_ = fuse_session_new(&args, &ops, sizeof ops, this);
  fuse_opt_free_args(&args);
  if (se_ == nullptr) {
    *error = "fuse_session_new failed (bad options: " + optText + ")";
    return false;
  }
  std::vector<int> fdsBefore = opts_.autoUnmount ? OpenFds() : std::vector<int>();
  if (fuse_session_mount(se_, opts_.mountpoint.c_str()) != 0) {
    *error = "fuse_session_mount failed on " + opts_.mountpoint + " (see the message above)";
    fuse_session_destroy(se_);
    se_ = nullptr;
    return false;
  }
  // Before the first request (INIT) is read: kill_priv.h. Without it everything works as before,
  // one GETXATTR per write dearer.
  if (!UseKillPrivV2(se_, [](void* userdata) { return static_cast<Session*>(userdata)->killPriv(); })) {
    fprintf(stderr, "chunkfs: libfuse refused custom I/O: the kernel keeps asking for security.capability per write\n");
  }
  if (opts_.autoUnmount) fusermountSocket_ = TakeFusermountSocket(fdsBefore);
  connId_ = MountMinor(opts_.mountpoint);
  napi_value name;
  napi_create_string_utf8(env, "chunkfs-fuse3", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, onBatch, nullptr, name, 0, 1, this, TsfnFinalized, this, CallJs,
                                      &tsfn_) != napi_ok) {
    *error = "napi_create_threadsafe_function failed";
    fuse_session_unmount(se_);
    fuse_session_destroy(se_);
    se_ = nullptr;
    return false;
  }
  return StartPoll(env, onBatch, error);
}

// ---- The JS thread reads /dev/fuse itself ----

bool Session::StartPoll(napi_env env, napi_value onBatch, std::string* error) {
  int fd = fuse_session_fd(se_);
  uv_loop_t* loop = nullptr;
  napi_value resource;
  napi_value resourceName;
  // Non-blocking: a wake-up reads what is there and returns to the event loop.
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0 || napi_get_uv_event_loop(env, &loop) != napi_ok ||
      uv_poll_init(loop, &poll_, fd) != 0) {
    *error = std::string("cannot poll the FUSE device: ") + strerror(errno);
    return false;
  }
  poll_.data = this;
  uv_prepare_init(loop, &prepare_);
  prepare_.data = this;
  uv_unref(reinterpret_cast<uv_handle_t*>(&prepare_));  // never keeps the process alive by itself
  prepareClosed_ = false;
  pollOpen_ = true;
  pollClosed_ = false;
  env_ = env;
  napi_create_reference(env, onBatch, 1, &onBatchRef_);
  napi_create_object(env, &resource);
  napi_create_string_utf8(env, "chunkfs-fuse3-requests", NAPI_AUTO_LENGTH, &resourceName);
  napi_async_init(env, resource, resourceName, &asyncCtx_);
  uv_poll_start(&poll_, UV_READABLE, OnReadable);
  return true;
}

void Session::OnReadable(uv_poll_t* handle, int /*status*/, int /*events*/) {
  static_cast<Session*>(handle->data)->ReadRequests();
}

// Room for one more request: a slot beside the one a forget may need, and a whole write's bytes.
bool Session::HasRoom() {
  std::lock_guard<std::mutex> lk(mu_);
  return freeSlots_.size() >= 2 && writeBytes_ + opts_.maxWriteBytes <= kWriteBytesInFlightMax;
}

// Reads what the kernel has queued (at most kReadsPerWakeMax) and hands it to JS. Returns how many
// requests it read.
size_t Session::ReadBatch() {
  size_t got = 0;
  reading_ = true;
  for (size_t i = 0; i < kReadsPerWakeMax && pollOpen_; i++) {
    if (!HasRoom()) {  // backpressure: the kernel keeps the rest until JS answers some
      pollPaused_ = true;
      uv_poll_stop(&poll_);
      break;
    }
    int res = fuse_session_receive_buf(se_, &buf_);
    if (res == -EAGAIN) break;
    if (res == -EINTR) continue;
    if (res <= 0 || fuse_session_exited(se_)) {  // 0: unmounted or aborted (ENODEV)
      EndPoll(res < 0 ? res : 0);
      break;
    }
    fuse_session_process_buf(se_, &buf_);
    got++;
  }
  reading_ = false;  // before DeliverNow: a request queued by another thread from here on arms
  DeliverNow();
  return got;
}

bool Session::AllAnswered() {
  std::lock_guard<std::mutex> lk(mu_);
  return freeSlots_.size() == kSlotsMax;
}

void Session::ReadRequests() {
  if (ReadBatch() == 0) return;
  Spin();
}

// Every request answered (at once in this wake-up, or later: see OnPrepare): a client that waits
// for each answer sends its next request within microseconds. Reading again for a short while
// takes it on this thread, where sleeping would cost a wake-up through another CPU (kSpinNs,
// measured reason in session.h). Not while JS still owes an answer: its promise jobs and I/O
// callbacks run only when this returns to the event loop.
void Session::Spin() {
  if (opts_.spinNs == 0) return;
  const int64_t first = MonotonicNs();
  int64_t last = first;  // when the last request came
  for (size_t round = 0; round < kSpinRoundsMax && pollOpen_ && !pollPaused_ && AllAnswered(); round++) {
    int64_t now = MonotonicNs();
    // Timers and other I/O callbacks wait while this spins: at most kSpinTotalNs per wake-up.
    if (now - last > static_cast<int64_t>(opts_.spinNs) || now - first > kSpinTotalNs) break;
    if (ReadBatch() > 0) last = now;  // a request came: wait again as long for the next one
  }
}

// An fsync'd write is WRITE, answered at once, then FSYNC, answered after its disk waits: the
// client's next WRITE came while this thread slept in the event loop and cost a wake-up (a 4 KiB
// pwrite took 150 us p50 after an fsync, 28 us in a run of buffered writes). So the last answer
// owed, given from a promise job, asks for one spin right before the loop would sleep.
void Session::OnPrepare(uv_prepare_t* handle) {
  auto* s = static_cast<Session*>(handle->data);
  uv_prepare_stop(handle);
  s->spinWanted_ = false;
  if (s->pollOpen_ && !s->pollPaused_) s->Spin();
}

void Session::ResumeIfPaused() {
  if (!pollPaused_ || !pollOpen_ || !HasRoom()) return;
  pollPaused_ = false;
  uv_poll_start(&poll_, UV_READABLE, OnReadable);
}

void Session::EndPoll(int result) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    loopEnded_ = true;
    loopResult_ = result;
  }
  ClosePoll();
}

void Session::ClosePoll() {
  if (!pollOpen_) return;
  pollOpen_ = false;
  uv_prepare_stop(&prepare_);
  uv_close(reinterpret_cast<uv_handle_t*>(&prepare_), [](uv_handle_t* h) {
    auto* s = static_cast<Session*>(h->data);
    s->prepareClosed_ = true;
    s->MaybeDelete();
  });
  uv_poll_stop(&poll_);
  uv_close(reinterpret_cast<uv_handle_t*>(&poll_), [](uv_handle_t* h) {
    auto* s = static_cast<Session*>(h->data);
    s->pollClosed_ = true;
    s->MaybeDelete();
  });
}

// Hand every queued request to JS now, in a callback scope (promise jobs run when it closes).
void Session::DeliverNow() {
  if (delivering_ || env_ == nullptr || destroyed_) return;
  {
    // Every request of the wake-up answered in C (read grants, attr_table.h, clean_closes.h): no JS
    // to enter (closing a callback scope runs the microtask queue).
    std::lock_guard<std::mutex> lk(mu_);
    if (pending_.empty() && interrupts_.empty() && !(loopEnded_ && !endDelivered_)) return;
  }
  delivering_ = true;
  napi_handle_scope hs;
  napi_open_handle_scope(env_, &hs);
  napi_value resource;
  napi_create_object(env_, &resource);
  napi_callback_scope cs;
  napi_open_callback_scope(env_, resource, asyncCtx_, &cs);
  napi_value fn;
  napi_get_reference_value(env_, onBatchRef_, &fn);
  for (size_t round = 0; round < kSlotsMax; round++) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (pending_.empty() && interrupts_.empty() && !(loopEnded_ && !endDelivered_)) break;
    }
    Deliver(env_, fn);
  }
  napi_close_callback_scope(env_, cs);
  napi_close_handle_scope(env_, hs);
  delivering_ = false;
}

void Session::Arm() {
  if (armed_ || tsfn_ == nullptr || reading_) return;
  armed_ = true;
  napi_call_threadsafe_function(tsfn_, nullptr, napi_tsfn_nonblocking);
}

void Session::Enqueue(Request* r) {
  std::unique_lock<std::mutex> lk(mu_);
  size_t bytes = r->op == Op::kWrite ? r->dataBytes : 0;
  // On the JS thread, which alone frees slots: never wait. ReadRequests read this request only
  // with a slot free and room for a whole write's bytes; a batch forget's notices beyond it are
  // delivered to make room.
  for (int round = 0; freeSlots_.empty() && round < kForgetRoomRoundsMax; round++) {
    lk.unlock();
    DeliverNow();
    lk.lock();
  }
  if (freeSlots_.empty()) {
    lk.unlock();
    if (r->req != nullptr) fuse_reply_err(r->req, EAGAIN);
    delete r;
    return;
  }
  uint32_t slot = freeSlots_.back();
  freeSlots_.pop_back();
  gens_[slot] = gens_[slot] >= kGenerationMax ? 1 : gens_[slot] + 1;
  r->id = (gens_[slot] << kSlotBits) | slot;
  r->nums[kFId] = static_cast<double>(r->id);
  slots_[slot] = r;
  delivered_[slot] = false;
  earlyInterrupt_[slot] = false;
  writeBytes_ += bytes;
  if (r->req != nullptr) {
    // Registered before JS can see (and answer) the request; may call Interrupted at once.
    lk.unlock();
    fuse_req_interrupt_func(r->req, OnInterrupt, reinterpret_cast<void*>(static_cast<uintptr_t>(r->id)));
    lk.lock();
  }
  pending_.push_back(r);
  Arm();
}

void Session::Interrupted(uint64_t id) {
  std::lock_guard<std::mutex> lk(mu_);
  uint32_t slot = static_cast<uint32_t>(id & kSlotMask);
  if (slots_[slot] == nullptr || slots_[slot]->id != id || earlyInterrupt_[slot]) return;
  earlyInterrupt_[slot] = true;  // noted once per request; bounds the notices by the slots
  if (!delivered_[slot]) return;  // goes out with the request itself
  interrupts_.push_back(id);
  Arm();
}

void Session::CallJs(napi_env env, napi_value fn, void* context, void* /*data*/) {
  if (env == nullptr) return;  // the thread-safe function is being torn down
  static_cast<Session*>(context)->Deliver(env, fn);
}

void Session::Deliver(napi_env env, napi_value fn) {
  Batch batch;
  {
    std::lock_guard<std::mutex> lk(mu_);
    armed_ = false;
    if (destroyed_) return;
    while (batch.requests.size() < kBatchMax && !pending_.empty()) {
      Request* r = pending_.front();
      pending_.pop_front();
      uint32_t slot = static_cast<uint32_t>(r->id & kSlotMask);
      delivered_[slot] = true;
      batch.requests.push_back(r);
      if (earlyInterrupt_[slot]) batch.interrupts.push_back(r->id);
    }
    batch.interrupts.insert(batch.interrupts.end(), interrupts_.begin(), interrupts_.end());
    interrupts_.clear();
    if (!pending_.empty()) Arm();
    if (loopEnded_ && pending_.empty() && !endDelivered_) {
      batch.ended = true;
      batch.loopResult = loopResult_;
      endDelivered_ = true;
    }
  }
  // Notices (forgets) were answered by libfuse already: their slots are free once delivered. Read
  // before the call: JS answers (and so frees) many requests before it returns.
  std::vector<Request*> notices;
  for (Request* r : batch.requests) {
    if (r->req == nullptr) notices.push_back(r);
  }
  CallBatch(env, fn, &batch);
  std::lock_guard<std::mutex> lk(mu_);
  for (Request* r : notices) {
    Release(static_cast<uint32_t>(r->id & kSlotMask));
    delete r;
  }
}

void Session::Release(uint32_t slot) {
  slots_[slot] = nullptr;
  freeSlots_.push_back(slot);
}

Request* Session::Take(uint64_t id) {
  std::lock_guard<std::mutex> lk(mu_);
  uint32_t slot = static_cast<uint32_t>(id & kSlotMask);
  Request* r = slots_[slot];
  if (r == nullptr || r->id != id || !delivered_[slot] || r->req == nullptr) return nullptr;
  if (r->op == Op::kWrite) writeBytes_ -= r->dataBytes;
  // Answered: what it changed is in place now, and a grant made while it was in flight may predate it.
  if (ChangesData(r->op, static_cast<int>(r->nums[kFFlags]))) grants_.Bump();
  Release(slot);
  // Answered after its wake-up (not inside DeliverNow) and nothing else owed: spin before sleeping.
  if (pollOpen_ && !delivering_ && !spinWanted_ && opts_.spinNs != 0 && freeSlots_.size() == kSlotsMax) {
    spinWanted_ = true;
    uv_prepare_start(&prepare_, OnPrepare);
  }
  return r;
}

// The kernel's poll of /dev/fuse reports POLLERR once the connection is gone (fuse_dev_poll). The
// superblock gives up its device number only after that, so a live answer means the id is still ours.
bool Session::ConnectionLive() const {
  if (se_ == nullptr || destroyed_) return false;
  pollfd p{fuse_session_fd(se_), POLLIN, 0};
  if (poll(&p, 1, 0) < 0) return false;
  return (p.revents & (POLLERR | POLLHUP | POLLNVAL)) == 0;
}

void Session::MaybeDelete() {
  if (handleGone_ && tsfnGone_ && pollClosed_ && prepareClosed_) delete this;
}

int Session::InvalidateInode(uint64_t ino) {
  if (destroyed_ || se_ == nullptr) return -ENOTCONN;
  return fuse_lowlevel_notify_inval_inode(se_, ino, 0, 0);
}

int Session::InvalidateEntry(uint64_t parent, const std::string& name) {
  if (destroyed_ || se_ == nullptr) return -ENOTCONN;
  return fuse_lowlevel_notify_inval_entry(se_, parent, name.data(), name.size());
}

size_t Session::Destroy(napi_env env) {
  if (destroyed_) return 0;
  ClosePoll();  // before fuse_session_unmount closes the descriptor it polls
  size_t unanswered = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    destroyed_ = true;
    for (uint32_t slot = 0; slot < kSlotsMax; slot++) {
      Request* r = slots_[slot];
      if (r == nullptr) continue;
      if (r->req != nullptr) {
        fuse_reply_err(r->req, EIO);
        unanswered++;
      }
      ReleaseData(env, r);
      slots_[slot] = nullptr;
      delete r;
    }
    pending_.clear();  // every pending request was in a slot, deleted above
  }
  fuse_session_unmount(se_);
  fuse_session_destroy(se_);
  se_ = nullptr;
  free(buf_.mem);
  buf_.mem = nullptr;
  if (onBatchRef_ != nullptr) napi_delete_reference(env, onBatchRef_);
  onBatchRef_ = nullptr;
  if (asyncCtx_ != nullptr) napi_async_destroy(env, asyncCtx_);
  asyncCtx_ = nullptr;
  napi_release_threadsafe_function(tsfn_, napi_tsfn_release);
  return unanswered;
}

void Session::TsfnFinalized(napi_env /*env*/, void* data, void* /*hint*/) {
  auto* s = static_cast<Session*>(data);
  s->tsfn_ = nullptr;
  s->tsfnGone_ = true;
  s->MaybeDelete();
}

void Session::HandleGone() {
  handleGone_ = true;
  MaybeDelete();
}

}  // namespace fuse3
