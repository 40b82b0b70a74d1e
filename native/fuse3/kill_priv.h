// FUSE_HANDLE_KILLPRIV_V2 on libfuse 3.14, which cannot ask for it. Without it the
// kernel asks for security.capability (a GETXATTR round trip) before every write, and fetches the
// attributes (a GETATTR) before every chown. With it the kernel marks the super block SB_NOSEC: an
// inode without set-id bits is checked once, and the file system drops set-id bits itself, told so
// per request (FUSE_WRITE_KILL_SUIDGID, FATTR_KILL_SUIDGID, FUSE_OPEN_KILL_SUIDGID).
//
// libfuse 3.14 neither offers the flag in its INIT answer nor passes the per-request bits to the
// ops. So its I/O goes through fuse_session_custom_io: reads record the kill bit of the request
// just read (the op that libfuse calls next, on the same thread, picks it up), and the INIT answer
// gets the flag when the kernel offered it.
#pragma once
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include <atomic>
#include <cstdint>

namespace fuse3 {

// One session's negotiation: the INIT request whose answer gets the flag, and whether it did.
struct KillPrivState {
  std::atomic<uint64_t> initUnique{0};  // 0: none pending
  std::atomic<bool> negotiated{false};
};

// Routes the session's device I/O through the wrappers; call after fuse_session_mount, with the
// session's userdata being what stateOf maps to its state. False (nothing changed) when libfuse
// refuses.
bool UseKillPrivV2(fuse_session* se, KillPrivState* (*stateOf)(void* userdata));

// The request this thread read last asked the file system to drop set-id bits (the caller has no
// CAP_FSETID). Valid inside the op libfuse calls for that request.
bool RequestKillsSuidgid();

}  // namespace fuse3
