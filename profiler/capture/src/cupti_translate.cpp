#include "cupti_translate.h"

#include <cxxabi.h>
#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <vector>

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

// Argument words read per launch (a launch passes at most 32 KiB of parameters; PyTorch's
// largest structs are a few KiB): bounds the callback's work.
constexpr size_t kMaxArgWords = 1024;
// Device pointers are user-space virtual addresses (unified addressing): never in the first
// page, never at or above 2^57 (the top of 5-level paging). Small integers, sizes, and pairs
// of floats fall outside.
constexpr uint64_t kLowestPointer = 4096;
constexpr uint64_t kPastUserSpace = uint64_t{1} << 57;

bool is_runtime_launch(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
      return true;
    default:
      return false;
  }
}

bool is_driver_launch(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      return true;
    default:
      return false;
  }
}

// A launch in progress on this thread, between the ENTER and EXIT callbacks of the call that
// made it. A runtime launch's frame collects the arguments of the driver launch it goes
// through; that driver launch's own frame is then `merged` (reported once, by the runtime).
struct LaunchFrame {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  LaunchInfo info;
  void** args = nullptr;          // runtime launches: the argument array
  const void* kernel = nullptr;   // __cudaLaunchKernel: its CUkernel
  bool merged = false;
};
thread_local std::vector<LaunchFrame>* tl_launches = nullptr;  // leaked per thread: tiny

std::vector<LaunchFrame>& launches() {
  if (!tl_launches) tl_launches = new std::vector<LaunchFrame>();
  return *tl_launches;
}

// The innermost frame of a traced call with this domain and id, popped.
std::optional<LaunchFrame> pop_frame(CUpti_CallbackDomain domain, CUpti_CallbackId id) {
  auto& v = launches();
  if (v.empty() || v.back().domain != domain || v.back().cbid != id) return std::nullopt;
  LaunchFrame f = std::move(v.back());
  v.pop_back();
  return f;
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
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
      CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000};
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
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};
  return ids;
}

std::string CuptiTranslator::name_of(const char* symbol, const void* handle, KernelHandle kind) const {
  if (symbol) return demangle(symbol);
  if (name_ && handle) {
    const std::string n = name_(handle, kind);
    if (!n.empty()) return demangle(n.c_str());
  }
  return demangle(nullptr);
}

void CuptiTranslator::pointer_args(const void* handle, KernelHandle kind, void** args, void** extra, LaunchInfo& out) {
  if (!layout_ || !handle) return;
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
  const std::shared_ptr<const ParamLayout> layout = layout_(handle, kind);
  if (!layout) return;
  out.pointers.clear();
  // Every 8-byte word of every parameter, not only 8-byte parameters: PyTorch passes its
  // tensors inside structs (TensorInfo, at::detail::Array<char*, N>, a functor's captures).
  // A struct holding a pointer is 8-aligned, so its pointers sit at multiples of 8 from the
  // parameter's start. Words that cannot be a user-space address are skipped here; the rest
  // are looked up in the address index (O(log n), with an O(1) rejection outside all tables).
  size_t words = 0;
  for (size_t i = 0; i < layout->size() && words < kMaxArgWords; ++i) {
    const auto [off, size] = (*layout)[i];
    if (size < sizeof(uint64_t)) continue;
    const char* base = nullptr;
    if (args) {
      base = static_cast<const char*>(args[i]);
    } else {
      if (buffer_size && off + sizeof(uint64_t) > buffer_size) break;
      base = buffer + off;
    }
    if (!base) continue;
    size_t n = size / sizeof(uint64_t);
    if (!args && buffer_size) n = std::min(n, (buffer_size - off) / sizeof(uint64_t));
    n = std::min(n, kMaxArgWords - words);
    words += n;
    for (size_t w = 0; w < n; ++w) {
      uint64_t v = 0;
      std::memcpy(&v, base + w * sizeof v, sizeof v);
      if (v >= kLowestPointer && v < kPastUserSpace) out.pointers.push_back(v);
    }
  }
  out.args_read = true;
}

CuptiTranslator::Output CuptiTranslator::on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                                     const CUpti_CallbackData* cb) {
  Output out;
  if (!cb) return out;
  const bool enter = cb->callbackSite == CUPTI_API_ENTER;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (enter) {
      ++tl_runtime_depth;
      if (is_runtime_launch(id)) {
        // Only remembered here: the arguments come from the driver launch this call goes
        // through (see the driver branch), and the launch is reported at EXIT.
        LaunchFrame f{domain, id, {}, nullptr, nullptr, false};
        f.info.name = cb->symbolName ? demangle(cb->symbolName) : std::string();
        f.info.correlation = cb->correlationId;
        if (id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 ||
            id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060) {
          auto* p = params<cudaLaunchKernelExC_v11060_params>(cb);
          if (p) {
            if (p->config) f.info.stream = as_u64(p->config->stream);
            f.args = p->args;
          }
        } else if (auto* p = params<cudaLaunchKernel_v7000_params>(cb)) {
          // cudaLaunchKernel, cudaLaunchCooperativeKernel and __cudaLaunchKernel share this
          // parameter layout; the last one's first parameter is a cudaKernel_t (a CUkernel).
          f.info.stream = as_u64(p->stream);
          f.args = p->args;
          if (id == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000 ||
              id == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000)
            f.kernel = p->func;
        }
        launches().push_back(std::move(f));
      }
      return out;
    }
    if (is_runtime_launch(id)) {
      if (tl_runtime_depth > 0) --tl_runtime_depth;
      std::optional<LaunchFrame> f = pop_frame(domain, id);
      if (!f || !runtime_ok(cb)) return out;
      // No driver launch seen (a runtime that launches another way): a CUkernel can still be
      // described by the driver.
      if (!f->info.args_read && f->kernel) pointer_args(f->kernel, KernelHandle::kKernel, f->args, nullptr, f->info);
      if (f->info.name.empty()) f->info.name = name_of(cb->symbolName, f->kernel, KernelHandle::kKernel);
      out.launch = std::move(f->info);
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
  if (is_driver_launch(id)) {
    if (!enter) {
      std::optional<LaunchFrame> f = pop_frame(domain, id);
      if (f && !f->merged && driver_ok(cb)) out.launch = std::move(f->info);
      return out;
    }
    CUfunction fn = nullptr;
    void** kernel_params = nullptr;
    void** extra = nullptr;
    uint64_t stream = 0;
    switch (id) {
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
        auto* p = params<cuLaunchKernel_params>(cb);
        if (p) fn = p->f, kernel_params = p->kernelParams, extra = p->extra, stream = as_u64(p->hStream);
        break;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
        auto* p = params<cuLaunchKernelEx_params>(cb);
        if (p) fn = p->f, kernel_params = p->kernelParams, extra = p->extra, stream = p->config ? as_u64(p->config->hStream) : 0;
        break;
      }
      default: {  // cooperative launches: no `extra`
        auto* p = params<cuLaunchCooperativeKernel_params>(cb);
        if (p) fn = p->f, kernel_params = p->kernelParams, stream = as_u64(p->hStream);
        break;
      }
    }
    auto& v = launches();
    LaunchFrame f{domain, id, {}, nullptr, nullptr, false};
    if (!v.empty() && v.back().domain == CUPTI_CB_DOMAIN_RUNTIME_API && !v.back().info.args_read) {
      // The driver launch of the runtime launch in progress on this thread: its CUfunction
      // and kernelParams describe the runtime launch's arguments.
      LaunchFrame& r = v.back();
      pointer_args(fn, KernelHandle::kFunction, kernel_params, extra, r.info);
      r.info.driver_correlation = cb->correlationId;
      if (r.info.name.empty()) r.info.name = name_of(cb->symbolName, fn, KernelHandle::kFunction);
      f.merged = true;
    } else {
      f.info.name = name_of(cb->symbolName, fn, KernelHandle::kFunction);
      f.info.correlation = cb->correlationId;
      f.info.stream = stream;
      pointer_args(fn, KernelHandle::kFunction, kernel_params, extra, f.info);
    }
    v.push_back(std::move(f));
    return out;
  }
  if (tl_runtime_depth > 0) return out;  // inside a runtime call we already trace
  if (enter) return out;
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

void LaunchTables::put(const LaunchInfo& l, std::vector<std::string> tables) {
  auto e = std::make_shared<Entry>();
  e->tables = std::move(tables);
  e->ids[0] = l.correlation;
  e->ids[1] = l.driver_correlation;
  std::lock_guard<std::mutex> lk(mu_);
  while (order_.size() >= capacity_) {
    auto old = order_.front();
    order_.pop_front();
    if (old->taken) continue;
    for (uint32_t id : old->ids)
      if (id) {
        auto it = by_id_.find(id);
        if (it != by_id_.end() && it->second == old) by_id_.erase(it);
      }
    ++forgotten_;
  }
  for (uint32_t id : e->ids)
    if (id) by_id_[id] = e;
  order_.push_back(std::move(e));
}

std::vector<std::string> LaunchTables::take(uint32_t correlation) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = by_id_.find(correlation);
  if (it == by_id_.end()) return {};
  std::shared_ptr<Entry> e = it->second;
  for (uint32_t id : e->ids)
    if (id) {
      auto j = by_id_.find(id);
      if (j != by_id_.end() && j->second == e) by_id_.erase(j);
    }
  e->taken = true;
  // Taken entries leave the order queue as it is popped; drop the ones at its front now so
  // that it does not grow with entries that are already gone.
  while (!order_.empty() && order_.front()->taken) order_.pop_front();
  return std::move(e->tables);
}

std::vector<std::string> tables_of_launch(const LaunchInfo& l, const wire::AddressIndex& idx) {
  std::set<std::string> names;
  for (uint64_t p : l.pointers)
    if (const auto* e = idx.find(p)) names.insert(e->name);
  return {names.begin(), names.end()};
}

}  // namespace edo::capture
