// The exported C API (profiler/include/edo/edo.h). Nothing here throws across the C boundary.
#include "edo/dtype.h"
#include "edo/edo.h"

#include <string>

#include "api_backends.h"
#include "cuda_side.h"
#include "events.h"
#include "weights.h"

using namespace edo::capture;

namespace {

// What no real table or batch comes near (issue 30 §9): a count that is a negative number
// passed as unsigned (18446744073709551615), or a size past 2^56 bytes (64 PiB), is refused with
// EDO_ERR_INVALID_ARGUMENT instead of being recorded.
constexpr uint64_t kMaxRows = uint64_t{1} << 48;
constexpr uint64_t kMaxBytes = uint64_t{1} << 56;
constexpr uint64_t kMaxBatch = uint64_t{1} << 48;

bool shape_in_range(uint64_t rows, uint32_t dim, int dtype) {
  if (rows > kMaxRows) return false;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(rows, uint64_t{dim}, &bytes)) return false;
  if (__builtin_mul_overflow(bytes, uint64_t(edo::dtype_code_bytes(static_cast<unsigned>(dtype))), &bytes)) return false;
  return bytes <= kMaxBytes;
}

}  // namespace

extern "C" {

EDO_API int64_t edo_table_register(const char* name, const void* base, uint64_t rows, uint32_t dim,
                                   edo_dtype dtype, edo_device device) {
  if (!shape_in_range(rows, dim, int(dtype))) return EDO_ERR_INVALID_ARGUMENT;
  try {
    return api_register(name, base, rows, dim, int(dtype), int(device));
  } catch (...) {
    return EDO_ERR_NO_MEMORY;
  }
}

EDO_API int edo_table_lookup(int64_t table, const void* indices, uint64_t count,
                             edo_index_type type, edo_device device, void* stream) {
  if (count > kMaxBatch) return EDO_ERR_INVALID_ARGUMENT;
  try {
    return api_lookup(table, indices, count, int(type), int(device), stream);
  } catch (...) {
    return EDO_ERR_NO_MEMORY;
  }
}

EDO_API int edo_table_set_extra_bytes(int64_t table, const char* kind, uint64_t bytes) {
  if (bytes > kMaxBytes) return EDO_ERR_INVALID_ARGUMENT;
  try {
    return api_set_extra_bytes(table, kind, bytes);
  } catch (...) {
    return EDO_ERR_NO_MEMORY;
  }
}

EDO_API int edo_table_weights(int64_t table, const void* weights, uint64_t row_stride, edo_device device,
                              void* stream) {
  try {
    return api_table_weights(table, weights, row_stride, int(device), stream);
  } catch (...) {
    return EDO_ERR_NO_MEMORY;
  }
}

EDO_API int edo_step(void) {
  try {
    return api_step();
  } catch (...) {
    return EDO_ERR_NO_MEMORY;
  }
}

EDO_API int edo_release_gpu_capture(const char* tool) {
  try {
    cupti_release(tool && *tool ? tool : "another tool");
  } catch (...) {
  }
  return EDO_OK;
}

EDO_API int edo_note(const char* key, const char* value) {
  // Bounded: a note is a fact about the job (a TorchRec table's config name and features), not
  // a log; "edo." keys are the tracer's own (the collector's flush replies).
  if (!key || !value) return EDO_ERR_INVALID_ARGUMENT;
  const std::string k(key), v(value);
  if (k.empty() || k.size() > 256 || v.size() > 65536 || k.rfind("edo.", 0) == 0) return EDO_ERR_INVALID_ARGUMENT;
  try {
    record_note(k, v);
  } catch (...) {
    return EDO_ERR_NO_MEMORY;
  }
  return EDO_OK;
}

EDO_API const char* edo_strerror(int code) {
  switch (code) {
    case EDO_OK: return "success";
    case EDO_ERR_INVALID_ARGUMENT: return "invalid argument (null name, zero rows or dim, bad enum value, a count or size out of range)";
    case EDO_ERR_BAD_HANDLE: return "unknown table handle (not returned by edo_table_register)";
    case EDO_ERR_NO_MEMORY: return "tracer buffers full: the batch was dropped and counted";
    case EDO_ERR_NO_CUDA: return "device indices given but no usable CUDA driver";
    case EDO_ERR_CUDA: return "a CUDA call failed while copying device indices";
    case EDO_ERR_SHAPE_MISMATCH: return "table name already registered with another shape";
    default: return "unknown edo error code";
  }
}

}  // extern "C"
