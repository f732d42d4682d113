#include "cupti_memory_apis.h"

#include <cuda.h>

#include "cupti_callback_data.h"

namespace edo::capture {

namespace {

// Fills `op` from the call's parameters; false when the call returned no address.
using MemReader = bool (*)(const CUpti_CallbackData* cb, MemOp& op);

struct MemApi {
  CUpti_CallbackId id;
  MemReader read;
};

// Allocations write the address through a pointer the caller passed (it may be null: then
// nothing was returned to record); frees name the address itself.
constexpr MemApi kRuntimeApis[] = {
    {CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cudaMalloc_v3020_params>(cb);
       if (!p->devPtr) return false;
       op.address = as_u64(*p->devPtr), op.bytes = p->size, op.api = "cudaMalloc";
       return true;
     }},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cudaMallocPitch_v3020_params>(cb);
       if (!p->devPtr || !p->pitch) return false;
       op.address = as_u64(*p->devPtr), op.bytes = *p->pitch * p->height, op.api = "cudaMallocPitch";
       return true;
     }},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cudaMallocManaged_v6000_params>(cb);
       if (!p->devPtr) return false;
       op.address = as_u64(*p->devPtr), op.bytes = p->size, op.api = "cudaMallocManaged";
       return true;
     }},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cudaMallocAsync_v11020_params>(cb);
       if (!p->devPtr) return false;
       op.address = as_u64(*p->devPtr), op.bytes = p->size, op.stream = as_u64(p->hStream), op.api = "cudaMallocAsync";
       return true;
     }},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cudaMallocFromPoolAsync_v11020_params>(cb);
       if (!p->ptr) return false;
       op.address = as_u64(*p->ptr), op.bytes = p->size, op.stream = as_u64(p->stream);
       op.api = "cudaMallocFromPoolAsync";
       return true;
     }},
    {CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cudaFree_v3020_params>(cb);
       op.kind = MemOp::kFree, op.address = as_u64(p->devPtr), op.api = "cudaFree";
       return true;
     }},
    {CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cudaFreeAsync_v11020_params>(cb);
       op.kind = MemOp::kFree, op.address = as_u64(p->devPtr), op.stream = as_u64(p->hStream), op.api = "cudaFreeAsync";
       return true;
     }},
};

constexpr MemApi kDriverApis[] = {
    {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cuMemAlloc_v2_params>(cb);
       if (!p->dptr) return false;
       op.address = *p->dptr, op.bytes = p->bytesize, op.api = "cuMemAlloc";
       return true;
     }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cuMemAllocPitch_v2_params>(cb);
       if (!p->dptr || !p->pPitch) return false;
       op.address = *p->dptr, op.bytes = *p->pPitch * p->Height, op.api = "cuMemAllocPitch";
       return true;
     }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cuMemAllocManaged_params>(cb);
       if (!p->dptr) return false;
       op.address = *p->dptr, op.bytes = p->bytesize, op.api = "cuMemAllocManaged";
       return true;
     }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cuMemAllocAsync_params>(cb);
       if (!p->dptr) return false;
       op.address = *p->dptr, op.bytes = p->bytesize, op.stream = as_u64(p->hStream), op.api = "cuMemAllocAsync";
       return true;
     }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cuMemAllocFromPoolAsync_params>(cb);
       if (!p->dptr) return false;
       op.address = *p->dptr, op.bytes = p->bytesize, op.stream = as_u64(p->hStream), op.api = "cuMemAllocFromPoolAsync";
       return true;
     }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cuMemFree_v2_params>(cb);
       op.kind = MemOp::kFree, op.address = p->dptr, op.api = "cuMemFree";
       return true;
     }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cuMemFreeAsync_params>(cb);
       op.kind = MemOp::kFree, op.address = p->dptr, op.stream = as_u64(p->hStream), op.api = "cuMemFreeAsync";
       return true;
     }},
    // Virtual memory: a mapping is what makes memory addressable (cuMemCreate alone does not).
    {CUPTI_DRIVER_TRACE_CBID_cuMemMap,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cuMemMap_params>(cb);
       op.address = p->ptr, op.bytes = p->size, op.api = "cuMemMap";
       return true;
     }},
    {CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
     [](const CUpti_CallbackData* cb, MemOp& op) {
       auto* p = params<cuMemUnmap_params>(cb);
       op.kind = MemOp::kFree, op.address = p->ptr, op.bytes = p->size, op.api = "cuMemUnmap";
       return true;
     }},
};

template <size_t N>
std::optional<MemOp> read_op(const MemApi (&apis)[N], CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  for (const MemApi& api : apis) {
    if (api.id != id) continue;
    MemOp op;
    op.correlation = cb->correlationId;
    if (!api.read(cb, op) || !op.address) return std::nullopt;
    return op;
  }
  return std::nullopt;
}

}  // namespace

std::optional<MemOp> runtime_memory_op(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  return read_op(kRuntimeApis, id, cb);
}

std::optional<MemOp> driver_memory_op(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  return read_op(kDriverApis, id, cb);
}

}  // namespace edo::capture
