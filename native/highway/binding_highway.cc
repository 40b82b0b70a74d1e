// N-API binding for HighwayHash-256 (spec §4, §4.1, §9). Synchronous: a 4 MiB
// range hashes in about a millisecond, less than a thread-pool hop would cost
// in latency for the small reads that dominate. hashBlocksAsync hashes on the
// libuv pool instead, for whole-shard writes (DESIGN §5 "Shard hashes off the
// mount's thread"): with three replicas a written MiB is hashed three times. Every argument is checked here
// as well as in TypeScript (pair assertions): a bad call throws, never reads or
// writes out of bounds.
#include "binding_highway.h"

#include <cstdint>
#include <cstring>

#include "highwayhash.h"
#include "../napi_bytes.h"

namespace hh {
namespace {

constexpr int64_t kBlockBytesMax = INT64_C(1) << 31;
constexpr int64_t kBlockIndexMax = INT64_C(0xffffffff);

napi_value Fail(napi_env env, const char* message) {
  napi_throw_range_error(env, "ERR_CHUNKFS_HIGHWAY_NATIVE", message);
  return nullptr;
}

using napi_bytes::GetBytes;

bool GetInt(napi_env env, napi_value value, int64_t lo, int64_t hi, int64_t* out) {
  napi_valuetype type;
  if (napi_typeof(env, value, &type) != napi_ok || type != napi_number) return false;
  double d = 0;
  if (napi_get_value_double(env, value, &d) != napi_ok || d != static_cast<double>(static_cast<int64_t>(d))) return false;
  *out = static_cast<int64_t>(d);
  return *out >= lo && *out <= hi;
}

bool GetU64(napi_env env, napi_value value, uint64_t* out) {
  napi_valuetype type;
  bool lossless = false;
  if (napi_typeof(env, value, &type) != napi_ok || type != napi_bigint) return false;
  return napi_get_value_bigint_uint64(env, value, out, &lossless) == napi_ok && lossless;
}

bool GetKey(napi_env env, napi_value value, uint64_t key[4]) {
  uint8_t* bytes = nullptr;
  size_t length = 0;
  if (!GetBytes(env, value, &bytes, &length) || length != kKeyBytes) return false;
  for (int w = 0; w < 4; w++) {
    uint64_t x = 0;
    for (int b = 7; b >= 0; b--) x = (x << 8) | bytes[8 * w + b];  // DESIGN §3: key words little-endian
    key[w] = x;
  }
  return true;
}

// The arguments hashBlocks and verifyBlocks share:
// (baseKey32, fileId, chunkIndex, shardIndex, version, firstBlock, data, blockBytes, table)
struct Range {
  ShardKey key;
  uint32_t firstBlock;
  const uint8_t* data;
  size_t length;
  size_t blockBytes;
  uint8_t* table;
  size_t tableLength;
};

const char* ParseRangeArgs(napi_env env, napi_value* argv, Range* r);

const char* ParseRange(napi_env env, napi_callback_info info, Range* r) {
  size_t argc = 9;
  napi_value argv[9];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 9) return "expected 9 arguments";
  return ParseRangeArgs(env, argv, r);
}

const char* ParseRangeArgs(napi_env env, napi_value* argv, Range* r) {
  uint64_t base[4], fileId = 0, chunkIndex = 0, version = 0;
  int64_t shardIndex = 0, firstBlock = 0, blockBytes = 0;
  if (!GetKey(env, argv[0], base)) return "key must be a 32-byte Uint8Array";
  if (!GetU64(env, argv[1], &fileId)) return "file_id must be a u64 bigint";
  if (!GetU64(env, argv[2], &chunkIndex)) return "chunk_index must be a u64 bigint";
  if (!GetInt(env, argv[3], 0, 0xffff, &shardIndex)) return "shard_index must be a u16";
  if (!GetU64(env, argv[4], &version)) return "version must be a u64 bigint";
  if (!GetInt(env, argv[5], 0, kBlockIndexMax, &firstBlock)) return "first block index must be a u32";
  uint8_t* data = nullptr;
  if (!GetBytes(env, argv[6], &data, &r->length)) return "data must be a Uint8Array";
  if (!GetInt(env, argv[7], 1, kBlockBytesMax, &blockBytes)) return "bitrot_block out of range";
  if (!GetBytes(env, argv[8], &r->table, &r->tableLength)) return "hash entries must be a Uint8Array";
  const uint64_t blocks = (r->length + static_cast<uint64_t>(blockBytes) - 1) / static_cast<uint64_t>(blockBytes);
  if (blocks > 0 && static_cast<uint64_t>(firstBlock) + blocks - 1 > static_cast<uint64_t>(kBlockIndexMax)) {
    return "block index past u32";
  }
  if (r->tableLength < blocks * kDigestBytes) return "hash entries shorter than 32 bytes per block";
  r->key = MakeShardKey(base, fileId, chunkIndex, static_cast<uint32_t>(shardIndex), version);
  r->firstBlock = static_cast<uint32_t>(firstBlock);
  r->data = data;
  r->blockBytes = static_cast<size_t>(blockBytes);
  return nullptr;
}

bool Overlaps(const uint8_t* a, size_t aLength, const uint8_t* b, size_t bLength) {
  return aLength > 0 && bLength > 0 && a < b + bLength && b < a + aLength;
}

// hashBlocks(...range): writes 32 bytes per block into table.
napi_value HashBlocksJs(napi_env env, napi_callback_info info) {
  Range r;
  if (const char* error = ParseRange(env, info, &r)) return Fail(env, error);
  const size_t outBytes = (r.length + r.blockBytes - 1) / r.blockBytes * kDigestBytes;
  if (Overlaps(r.table, outBytes, r.data, r.length)) return Fail(env, "hashBlocks: output overlaps data");
  HashBlocks(r.key, r.firstBlock, r.data, r.length, r.blockBytes, r.table);
  return nullptr;
}

// One hashBlocksAsync call: the range, references that keep its data and table alive, the callback.
struct HashJob {
  Range r;
  napi_ref data = nullptr;
  napi_ref table = nullptr;
  napi_ref done = nullptr;
  napi_async_work work = nullptr;
};

void HashJobExecute(napi_env, void* arg) {
  HashJob* job = static_cast<HashJob*>(arg);
  HashBlocks(job->r.key, job->r.firstBlock, job->r.data, job->r.length, job->r.blockBytes, job->r.table);
}

void HashJobComplete(napi_env env, napi_status status, void* arg) {
  HashJob* job = static_cast<HashJob*>(arg);
  napi_value done = nullptr, global = nullptr, argv[1];
  napi_get_reference_value(env, job->done, &done);
  napi_get_global(env, &global);
  if (status == napi_ok) {
    napi_get_null(env, &argv[0]);
  } else {
    napi_value message;
    napi_create_string_utf8(env, "hashBlocksAsync: the work was cancelled", NAPI_AUTO_LENGTH, &message);
    napi_create_error(env, nullptr, message, &argv[0]);
  }
  napi_delete_reference(env, job->data);
  napi_delete_reference(env, job->table);
  napi_delete_reference(env, job->done);
  napi_delete_async_work(env, job->work);
  delete job;
  if (done != nullptr) napi_call_function(env, global, done, 1, argv, nullptr);
}

// hashBlocksAsync(...range, done): hashBlocks on the libuv pool; done(null) once table holds the
// digests. The caller must not touch data or table until then.
napi_value HashBlocksAsyncJs(napi_env env, napi_callback_info info) {
  size_t argc = 10;
  napi_value argv[10];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 10) return Fail(env, "expected 10 arguments");
  napi_valuetype type;
  if (napi_typeof(env, argv[9], &type) != napi_ok || type != napi_function) {
    return Fail(env, "hashBlocksAsync: the last argument must be a function");
  }
  HashJob* job = new HashJob();
  if (const char* error = ParseRangeArgs(env, argv, &job->r)) {
    delete job;
    return Fail(env, error);
  }
  const size_t outBytes = (job->r.length + job->r.blockBytes - 1) / job->r.blockBytes * kDigestBytes;
  if (Overlaps(job->r.table, outBytes, job->r.data, job->r.length)) {
    delete job;
    return Fail(env, "hashBlocksAsync: output overlaps data");
  }
  napi_value name;
  napi_create_string_utf8(env, "chunkfs:hashBlocks", NAPI_AUTO_LENGTH, &name);
  if (napi_create_reference(env, argv[6], 1, &job->data) != napi_ok ||
      napi_create_reference(env, argv[8], 1, &job->table) != napi_ok ||
      napi_create_reference(env, argv[9], 1, &job->done) != napi_ok ||
      napi_create_async_work(env, nullptr, name, HashJobExecute, HashJobComplete, job, &job->work) != napi_ok ||
      napi_queue_async_work(env, job->work) != napi_ok) {
    if (job->data != nullptr) napi_delete_reference(env, job->data);
    if (job->table != nullptr) napi_delete_reference(env, job->table);
    if (job->done != nullptr) napi_delete_reference(env, job->done);
    if (job->work != nullptr) napi_delete_async_work(env, job->work);
    delete job;
    return Fail(env, "hashBlocksAsync: could not queue the work");
  }
  return nullptr;
}

// verifyBlocks(...range): index of the first mismatching block in the range, or -1.
napi_value VerifyBlocksJs(napi_env env, napi_callback_info info) {
  Range r;
  if (const char* error = ParseRange(env, info, &r)) return Fail(env, error);
  const int64_t bad = VerifyBlocks(r.key, r.firstBlock, r.data, r.length, r.blockBytes, r.table);
  napi_value result;
  napi_create_int64(env, bad, &result);
  return result;
}

// hash256(key32, data, out32): one plain HighwayHash-256 (tests, golden vectors).
napi_value Hash256Js(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 3) return Fail(env, "hash256: expected 3 arguments");
  uint64_t key[4];
  uint8_t *data = nullptr, *out = nullptr;
  size_t length = 0, outLength = 0;
  if (!GetKey(env, argv[0], key)) return Fail(env, "hash256: key must be a 32-byte Uint8Array");
  if (!GetBytes(env, argv[1], &data, &length)) return Fail(env, "hash256: data must be a Uint8Array");
  if (!GetBytes(env, argv[2], &out, &outLength) || outLength != kDigestBytes) {
    return Fail(env, "hash256: out must be a 32-byte Uint8Array");
  }
  Hash256(key, data, length, out);
  return nullptr;
}

napi_value KernelString(napi_env env, Kernel kernel) {
  napi_value result;
  napi_create_string_utf8(env, KernelName(kernel), NAPI_AUTO_LENGTH, &result);
  return result;
}

napi_value ActiveKernelJs(napi_env env, napi_callback_info) { return KernelString(env, ActiveKernel()); }
napi_value DetectedKernelJs(napi_env env, napi_callback_info) { return KernelString(env, DetectKernel()); }

// setHighwayKernel(name): falls back to scalar if the CPU lacks it; returns the kernel now active.
napi_value SetKernelJs(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  char name[32] = {0};
  size_t nameLength = 0;
  if (argc != 1 || napi_get_value_string_utf8(env, argv[0], name, sizeof(name), &nameLength) != napi_ok) {
    return Fail(env, "setHighwayKernel: expected a kernel name");
  }
  for (int k = 0; k < kKernelCount; k++) {
    if (std::strcmp(name, KernelName(static_cast<Kernel>(k))) == 0) {
      return KernelString(env, SetKernel(static_cast<Kernel>(k)));
    }
  }
  return Fail(env, "setHighwayKernel: unknown kernel name");
}

}  // namespace

napi_status RegisterExports(napi_env env, napi_value exports) {
  const napi_property_descriptor props[] = {
      {"hash256", nullptr, Hash256Js, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"hashBlocks", nullptr, HashBlocksJs, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"hashBlocksAsync", nullptr, HashBlocksAsyncJs, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"verifyBlocks", nullptr, VerifyBlocksJs, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"highwayKernel", nullptr, ActiveKernelJs, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"detectedHighwayKernel", nullptr, DetectedKernelJs, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
      {"setHighwayKernel", nullptr, SetKernelJs, nullptr, nullptr, nullptr, napi_enumerable, nullptr},
  };
  return napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
}

}  // namespace hh
