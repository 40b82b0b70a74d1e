// A batch of requests as JS receives it: one Float64Array of rows (request.h Field), the names,
// the data buffers (ownership of each copied write/setxattr payload moves to JS), interrupt
// notices, and the loop's end.
#pragma once
#include <node_api.h>

#include <vector>

#include "request.h"

namespace fuse3 {

struct Batch {
  std::vector<Request*> requests;
  std::vector<uint64_t> interrupts;
  bool ended = false;
  int loopResult = 0;
};

// Calls fn(rows, count, names, buffers, ended, loopResult); interrupts are rows of Op::kInterrupt
// after the requests. An exception thrown by fn goes to process 'uncaughtException'.
void CallBatch(napi_env env, napi_value fn, Batch* batch);

// Takes pooled write bytes back from JS before the request is freed: JS's Buffer is detached
// (length 0 from now on), so the pool may reuse the memory.
void ReleaseData(napi_env env, Request* r);

}  // namespace fuse3
