#include "cupti_translate.h"

#include <cxxabi.h>
#include <cuda.h>

#include <cstdlib>
#include <cstring>
#include <set>

namespace edo::capture {

namespace {
thread_local int tl_runtime_depth = 0;

template <class T>
const T* params(const CUpti_CallbackData* cb) {
  return static_cast<const T*>(cb->functionParams);
}

bool runtime_ok(const CUpti_CallbackData* cb) {
  return !cb->functionReturnValue || *static_cast<const int*>(cb->functionReturnValue) == 0;  // cudaSuccess
}
bool driver_ok(const CUpti_CallbackData* cb) {
  return !cb->functionReturnValue || *static_cast<const CUresult*>(cb->functionReturnValue) == CUDA_SUCCESS;
}

uint64_t as_u64(const void* p) { return reinterpret_cast<uint64_t>(p); }

bool is_runtime_launch(CUpti_CallbackId id) {
  return id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 || id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 ||
         id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 || id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060;
}
}  // namespace

std::string demangle(const char* name) {
  if (!name) return "(unknown kernel)";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status == 0 && d) {
    std::string s(d);
    std::free(d);
    return s;
  }
  return name;
}

const std::vector<CUpti_CallbackId>& CuptiTranslator::runtime_cbids() {
  static const std::vector<CUpti_CallbackId> ids = {
      CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,          CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,     CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
      CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060};
  return ids;
}

const std::vector<CUpti_CallbackId>& CuptiTranslator::driver_cbids() {
  static const std::vector<CUpti_CallbackId> ids = {
      CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,   CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemCreate,     CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
      CUPTI_DRIVER_TRACE_CBID_cuMemMap,        CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx};
  return ids;
}

void CuptiTranslator::pointer_args(const void* func, bool driver, void** args, void** extra, LaunchInfo& out) {
  if (!param_info_ || !func) return;
  // Packed argument buffer (cuLaunchKernel `extra`): CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE.
  const char* buffer = nullptr;
  size_t buffer_size = 0;
  if (!args && extra) {
    for (size_t i = 0; i < 64 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = static_cast<const char*>(extra[i + 1]);
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) buffer_size = *static_cast<const size_t*>(extra[i + 1]);
    }
    if (!buffer) return;
  }
  if (!args && !buffer) return;
  for (size_t i = 0; i < 256; ++i) {
    size_t off = 0, size = 0;
    if (!param_info_(func, driver, i, &off, &size)) break;
    if (size != sizeof(uint64_t)) continue;
    uint64_t v = 0;
    if (args) {
      if (!args[i]) continue;
      std::memcpy(&v, args[i], sizeof v);
    } else {
      if (buffer_size && off + sizeof v > buffer_size) break;
      std::memcpy(&v, buffer + off, sizeof v);
    }
    if (v) out.pointers.push_back(v);
  }
}

CuptiTranslator::Output CuptiTranslator::on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                                     const CUpti_CallbackData* cb) {
  Output out;
  if (!cb) return out;
  const bool enter = cb->callbackSite == CUPTI_API_ENTER;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (enter) {
      ++tl_runtime_depth;
      // Launch arguments are read at entry (the launch is not yet done; args are valid).
      if (is_runtime_launch(id)) {
        LaunchInfo l;
        l.name = demangle(cb->symbolName);
        l.correlation = cb->correlationId;
        if (id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 || id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000) {
          auto* p = params<cudaLaunchKernel_v7000_params>(cb);
          l.stream = as_u64(p->stream);
          pointer_args(p->func, false, p->args, nullptr, l);
        } else {
          auto* p = params<cudaLaunchKernelExC_v11060_params>(cb);
          if (p->config) l.stream = as_u64(p->config->stream);
          pointer_args(p->func, false, p->args, nullptr, l);
        }
        out.launch = std::move(l);
      }
      return out;
    }
    if (tl_runtime_depth > 0) --tl_runtime_depth;
    if (!runtime_ok(cb)) return out;
    MemOp op;
    op.correlation = cb->correlationId;
    switch (id) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
        auto* p = params<cudaMalloc_v3020_params>(cb);
        if (!p->devPtr) return out;
        op.address = as_u64(*p->devPtr); op.bytes = p->size; op.api = "cudaMalloc";
        break;
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020: {
        auto* p = params<cudaMallocPitch_v3020_params>(cb);
        if (!p->devPtr || !p->pitch) return out;
        op.address = as_u64(*p->devPtr); op.bytes = *p->pitch * p->height; op.api = "cudaMallocPitch";
        break;
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
        auto* p = params<cudaMallocManaged_v6000_params>(cb);
        if (!p->devPtr) return out;
        op.address = as_u64(*p->devPtr); op.bytes = p->size; op.api = "cudaMallocManaged";
        break;
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020: {
        auto* p = params<cudaMallocAsync_v11020_params>(cb);
        if (!p->devPtr) return out;
        op.address = as_u64(*p->devPtr); op.bytes = p->size; op.stream = as_u64(p->hStream); op.api = "cudaMallocAsync";
        break;
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020: {
        auto* p = params<cudaMallocFromPoolAsync_v11020_params>(cb);
        if (!p->ptr) return out;
        op.address = as_u64(*p->ptr); op.bytes = p->size; op.stream = as_u64(p->stream); op.api = "cudaMallocFromPoolAsync";
        break;
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020: {
        auto* p = params<cudaFree_v3020_params>(cb);
        op.kind = MemOp::kFree; op.address = as_u64(p->devPtr); op.api = "cudaFree";
        break;
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020: {
        auto* p = params<cudaFreeAsync_v11020_params>(cb);
        op.kind = MemOp::kFree; op.address = as_u64(p->devPtr); op.stream = as_u64(p->hStream); op.api = "cudaFreeAsync";
        break;
      }
      default:
        return out;
    }
    if (op.address) out.mem.push_back(std::move(op));
    return out;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return out;
  if (tl_runtime_depth > 0) return out;  // inside a runtime call we already trace
  if (enter) {
    if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) {
      auto* p = params<cuLaunchKernel_params>(cb);
      LaunchInfo l;
      l.name = demangle(cb->symbolName);
      l.correlation = cb->correlationId;
      l.stream = as_u64(p->hStream);
      pointer_args(p->f, true, p->kernelParams, p->extra, l);
      out.launch = std::move(l);
    } else if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx) {
      auto* p = params<cuLaunchKernelEx_params>(cb);
      LaunchInfo l;
      l.name = demangle(cb->symbolName);
      l.correlation = cb->correlationId;
      if (p->config) l.stream = as_u64(p->config->hStream);
      pointer_args(p->f, true, p->kernelParams, p->extra, l);
      out.launch = std::move(l);
    }
    return out;
  }
  if (!driver_ok(cb)) return out;
  MemOp op;
  op.correlation = cb->correlationId;
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      auto* p = params<cuMemAlloc_v2_params>(cb);
      if (!p->dptr) return out;
      op.address = *p->dptr; op.bytes = p->bytesize; op.api = "cuMemAlloc";
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      auto* p = params<cuMemAllocPitch_v2_params>(cb);
      if (!p->dptr || !p->pPitch) return out;
      op.address = *p->dptr; op.bytes = *p->pPitch * p->Height; op.api = "cuMemAllocPitch";
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      auto* p = params<cuMemAllocManaged_params>(cb);
      if (!p->dptr) return out;
      op.address = *p->dptr; op.bytes = p->bytesize; op.api = "cuMemAllocManaged";
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync: {
      auto* p = params<cuMemAllocAsync_params>(cb);
      if (!p->dptr) return out;
      op.address = *p->dptr; op.bytes = p->bytesize; op.stream = as_u64(p->hStream); op.api = "cuMemAllocAsync";
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync: {
      auto* p = params<cuMemAllocFromPoolAsync_params>(cb);
      if (!p->dptr) return out;
      op.address = *p->dptr; op.bytes = p->bytesize; op.stream = as_u64(p->hStream); op.api = "cuMemAllocFromPoolAsync";
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2: {
      auto* p = params<cuMemFree_v2_params>(cb);
      op.kind = MemOp::kFree; op.address = p->dptr; op.api = "cuMemFree";
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync: {
      auto* p = params<cuMemFreeAsync_params>(cb);
      op.kind = MemOp::kFree; op.address = p->dptr; op.stream = as_u64(p->hStream); op.api = "cuMemFreeAsync";
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
      // Physical memory without an address yet: remembered until it is mapped.
      auto* p = params<cuMemCreate_params>(cb);
      if (p->handle) {
        std::lock_guard<std::mutex> lk(mu_);
        vmm_handles_[uint64_t(*p->handle)] = p->size;
      }
      return out;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease: {
      auto* p = params<cuMemRelease_params>(cb);
      std::lock_guard<std::mutex> lk(mu_);
      vmm_handles_.erase(uint64_t(p->handle));
      return out;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      auto* p = params<cuMemMap_params>(cb);
      op.address = p->ptr; op.bytes = p->size; op.api = "cuMemMap";
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      auto* p = params<cuMemUnmap_params>(cb);
      op.kind = MemOp::kFree; op.address = p->ptr; op.bytes = p->size; op.api = "cuMemUnmap";
      break;
    }
    default:
      return out;
  }
  if (op.address) out.mem.push_back(std::move(op));
  return out;
}

std::optional<KernelTime> CuptiTranslator::kernel_time(const CUpti_Activity* rec) {
  if (!rec || (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)) return std::nullopt;
  auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
  KernelTime t;
  t.name = demangle(k->name);
  t.ns = k->end > k->start ? k->end - k->start : 0;
  t.correlation = k->correlationId;
  return t;
}

std::optional<MemOp> CuptiTranslator::memory_record(const CUpti_Activity* rec) {
  if (!rec || rec->kind != CUPTI_ACTIVITY_KIND_MEMORY2) return std::nullopt;
  auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(rec);
  if (m->memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) return std::nullopt;
  MemOp op;
  if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) op.kind = MemOp::kAlloc;
  else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) op.kind = MemOp::kFree;
  else return std::nullopt;
  op.address = m->address;
  op.bytes = m->bytes;
  op.stream = m->streamId;
  op.device = int32_t(m->deviceId);
  op.correlation = m->correlationId;
  op.api = m->memoryPoolConfig.memoryPoolType != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID ? "MEMORY2:pool" : "MEMORY2";
  return op;
}

int64_t MemoryTracker::apply(const MemOp& op) {
  if (op.kind == MemOp::kAlloc) {
    if (!op.address || allocs_.count(op.address)) return 0;  // duplicate report
    allocs_[op.address] = op.bytes;
    live_ += int64_t(op.bytes);
    peak_ = std::max(peak_, live_);
    return int64_t(op.bytes);
  }
  auto it = allocs_.find(op.address);
  if (it == allocs_.end()) return 0;
  int64_t bytes = int64_t(it->second);
  if (op.bytes && op.bytes < it->second) {
    // Partial unmap of a VMM range: keep the rest mapped.
    bytes = int64_t(op.bytes);
    const uint64_t rest = it->second - op.bytes, start = it->first + op.bytes;
    allocs_.erase(it);
    allocs_[start] = rest;
  } else {
    allocs_.erase(it);
  }
  live_ -= bytes;
  return -bytes;
}

std::vector<std::string> tables_of_launch(const LaunchInfo& l, const wire::AddressIndex& idx) {
  std::set<std::string> names;
  for (uint64_t p : l.pointers)
    if (const auto* e = idx.find(p)) names.insert(e->name);
  return {names.begin(), names.end()};
}

}  // namespace edo::capture
