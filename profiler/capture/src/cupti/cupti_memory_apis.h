// The allocation and free APIs the tracer follows, one small reader per API in a table per
// domain (cupti_memory_apis.cpp) instead of a switch: what a successful call allocated or
// freed, read at its API exit. The virtual-memory calls that only create or release a handle
// (cuMemCreate, cuMemRelease) carry state between calls and stay in CuptiTranslator.
#pragma once

#include <cupti.h>

#include <optional>

#include "cupti_translate.h"

namespace edo::capture {

// The operation of a runtime API call (cudaMalloc, cudaFreeAsync, ...); nullopt for a callback
// id that is no allocation API, or a call that returned no address.
std::optional<MemOp> runtime_memory_op(CUpti_CallbackId id, const CUpti_CallbackData* cb);
// The same for the driver API (cuMemAlloc_v2, cuMemMap, cuMemUnmap, ...).
std::optional<MemOp> driver_memory_op(CUpti_CallbackId id, const CUpti_CallbackData* cb);

}  // namespace edo::capture
