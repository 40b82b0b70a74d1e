// The fuse_lowlevel_ops table: each op copies its arguments into a Request and queues it on the
// session (never waits for JS); init sets the connection's capabilities from the mount options.
#pragma once
#include "request.h"

namespace fuse3 {

fuse_lowlevel_ops LowlevelOps();

}  // namespace fuse3
