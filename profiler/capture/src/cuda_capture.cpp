// CUDA side of libedo_trace.so, all through dlopen (no link-time CUDA dependency):
//  * CUPTI: callbacks for allocations and launches, activity records for kernel timing and
//    MEMORY2, translated by cupti_translate.cpp;
//  * device-index lookups: cuMemcpyDtoHAsync into pinned staging buffers on the caller's
//    stream + an event; the background thread polls the events and counts finished copies.
// Without a CUDA driver all of this is off (silently; EDO_VERBOSE=1 says so).
#include <cupti.h>
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "cupti_translate.h"
#include "edo/edo.h"
#include "tracer.h"

#ifndef EDO_CUPTI_DEFAULT_PATH
#define EDO_CUPTI_DEFAULT_PATH ""
#endif

namespace edo::capture {
namespace {

// ---- driver API (libcuda.so.1) ----
struct Driver {
  bool loaded = false;
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned) = nullptr;
  CUresult (*cuMemFreeHost)(void*) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuCtxPushCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxPopCurrent)(CUcontext*) = nullptr;
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*cuFuncGetParamInfo)(CUfunction, size_t, size_t*, size_t*) = nullptr;
};
Driver drv;
std::once_flag drv_once;

template <class T>
void sym(void* h, T& f, const char* name) {
  f = reinterpret_cast<T>(dlsym(h, name));
}

bool load_driver() {
  std::call_once(drv_once, [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    sym(h, drv.cuMemHostAlloc, "cuMemHostAlloc");
    sym(h, drv.cuMemFreeHost, "cuMemFreeHost");
    sym(h, drv.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    sym(h, drv.cuEventCreate, "cuEventCreate");
    sym(h, drv.cuEventRecord, "cuEventRecord");
    sym(h, drv.cuEventQuery, "cuEventQuery");
    sym(h, drv.cuEventDestroy, "cuEventDestroy_v2");
    sym(h, drv.cuCtxGetCurrent, "cuCtxGetCurrent");
    sym(h, drv.cuCtxPushCurrent, "cuCtxPushCurrent_v2");
    sym(h, drv.cuCtxPopCurrent, "cuCtxPopCurrent_v2");
    sym(h, drv.cuStreamIsCapturing, "cuStreamIsCapturing");
#if CUDA_VERSION >= 12040
    sym(h, drv.cuFuncGetParamInfo, "cuFuncGetParamInfo");  // guarded: older drivers lack it
#endif
    drv.loaded = drv.cuMemHostAlloc && drv.cuMemcpyDtoHAsync && drv.cuEventCreate && drv.cuEventRecord &&
                 drv.cuEventQuery && drv.cuCtxGetCurrent && drv.cuCtxPushCurrent && drv.cuCtxPopCurrent;
  });
  return drv.loaded;
}

// ---- device-index staging ----
struct Pending {
  int64_t table;
  int type;
  uint64_t count;
  void* host;
  size_t capacity;
  CUevent event;
  CUcontext ctx;
};
std::mutex stage_mu;
std::deque<Pending> pending;              // stage_mu
std::vector<Pending> free_buffers;        // stage_mu (host + event kept)
uint64_t staged_bytes = 0;                // stage_mu
std::atomic<bool> cuda_dead_after_fork{false};

// ---- CUPTI ----
struct Cupti {
  bool active = false;
  CUptiResult (*cuptiSubscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = nullptr;
  CUptiResult (*cuptiEnableCallback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId) = nullptr;
  CUptiResult (*cuptiActivityEnable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*cuptiActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*cuptiActivityFlushAll)(uint32_t) = nullptr;
  CUptiResult (*cuptiActivityGetNextRecord)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*cuptiGetResultString)(CUptiResult, const char**) = nullptr;
  CUpti_SubscriberHandle sub = nullptr;
};
Cupti cupti;
CuptiTranslator* translator = nullptr;
std::mutex tracker_mu;
MemoryTracker* tracker = nullptr;
std::unordered_set<uint32_t>* callback_correlations = nullptr;  // tracker_mu: MEMORY2 dedupe

// Parameter layouts, cached per function handle.
std::mutex param_mu;
std::unordered_map<const void*, std::vector<std::pair<size_t, size_t>>>* param_cache = nullptr;
using GetFuncBySymbol = int (*)(CUfunction*, const void*);
GetFuncBySymbol get_func_by_symbol = nullptr;

bool param_info(const void* func, bool driver, size_t index, size_t* off, size_t* size) {
  if (!drv.cuFuncGetParamInfo || !func) return false;
  std::lock_guard<std::mutex> lk(param_mu);
  auto it = param_cache->find(func);
  if (it == param_cache->end()) {
    std::vector<std::pair<size_t, size_t>> layout;
    CUfunction f = nullptr;
    if (driver) {
      f = reinterpret_cast<CUfunction>(const_cast<void*>(func));
    } else {
      if (!get_func_by_symbol) get_func_by_symbol = reinterpret_cast<GetFuncBySymbol>(dlsym(RTLD_DEFAULT, "cudaGetFuncBySymbol"));
      if (!get_func_by_symbol || get_func_by_symbol(&f, func) != 0) f = nullptr;
    }
    if (f) {
      for (size_t i = 0; i < 256; ++i) {
        size_t o = 0, s = 0;
        if (drv.cuFuncGetParamInfo(f, i, &o, &s) != CUDA_SUCCESS) break;
        layout.emplace_back(o, s);
      }
    }
    it = param_cache->emplace(func, std::move(layout)).first;
  }
  if (index >= it->second.size()) return false;
  *off = it->second[index].first;
  *size = it->second[index].second;
  return true;
}

void record_op(const MemOp& op) {
  int64_t delta;
  {
    std::lock_guard<std::mutex> lk(tracker_mu);
    delta = tracker->apply(op);
  }
  if (delta != 0) record_memory_event(delta, op.address, op.stream, op.device, op.api.c_str());
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  try {
    auto out = translator->on_callback(domain, cbid, static_cast<const CUpti_CallbackData*>(data));
    for (auto& op : out.mem) {
      {
        std::lock_guard<std::mutex> lk(tracker_mu);
        if (callback_correlations->size() < (1u << 20)) callback_correlations->insert(op.correlation);
      }
      record_op(op);
    }
    if (out.launch) {
      auto idx = table_address_index();
      record_kernel_launch(out.launch->name, idx ? tables_of_launch(*out.launch, *idx) : std::vector<std::string>{});
    }
  } catch (...) {
    count_drop("cupti_callbacks", 1);
  }
}

constexpr size_t kActivityBuffer = 8 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, kActivityBuffer));
  *size = *buffer ? kActivityBuffer : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  try {
    CUpti_Activity* rec = nullptr;
    while (cupti.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      if (auto k = CuptiTranslator::kernel_time(rec)) {
        record_kernel_time(k->name, k->ns);
      } else if (auto m = CuptiTranslator::memory_record(rec)) {
        bool seen;
        {
          std::lock_guard<std::mutex> lk(tracker_mu);
          seen = callback_correlations->erase(m->correlation) > 0;
        }
        if (!seen) record_op(*m);  // an allocation the callbacks did not see
      }
    }
  } catch (...) {
    count_drop("cupti_records", 1);
  }
  free(buffer);
}

std::string result_string(CUptiResult r) {
  const char* s = nullptr;
  if (cupti.cuptiGetResultString) cupti.cuptiGetResultString(r, &s);
  return s ? s : "CUPTI error " + std::to_string(int(r));
}

void unavailable(const std::string& why) {
  const std::string line = "CUPTI unavailable (" + why +
                           "): GPU allocations and kernels are not traced; C API lookups (host and device), "
                           "NVTX ranges and tables are still recorded";
  tracer_log(line);
  record_note("cupti", "unavailable: " + why);
}

}  // namespace

namespace {
std::atomic<bool> cupti_pending{false};
std::atomic<int64_t> cupti_last_poll_ns{0};

// True once the CUDA runtime or driver library is mapped into this process.
bool cuda_in_process() {
  bool found = false;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) -> int {
        const char* n = info->dlpi_name;
        if (n && (std::strstr(n, "libcudart") || std::strstr(n, "libcuda.so"))) {
          *static_cast<bool*>(data) = true;
          return 1;
        }
        return 0;
      },
      &found);
  return found;
}

void cupti_start_now();
}  // namespace

// At load: CUPTI is attached right away only in processes that already map the CUDA runtime
// (programs linked against it). Others (python before `import torch`, compilers and shells a
// traced job spawns) are polled by the background thread (cupti_poll), so that a process
// that never touches CUDA never loads libcuda or libcupti.
void cupti_start() {
  if (!tracer_active() || !tracer_config().cuda) return;
  if (access("/proc/driver/nvidia/version", R_OK) != 0 && access("/dev/nvidiactl", F_OK) != 0) {
    tracer_verbose("no CUDA driver: GPU capture is off (C API, NVTX and host lookups still work)");
    return;
  }
  if (cuda_in_process()) cupti_start_now();
  else cupti_pending.store(true);
}

void cupti_poll() {
  if (!cupti_pending.load(std::memory_order_relaxed)) return;
  const int64_t now = now_ns();
  if (now - cupti_last_poll_ns.load() < 100000000) return;  // every 100 ms
  cupti_last_poll_ns.store(now);
  if (cuda_in_process()) {
    cupti_pending.store(false);
    cupti_start_now();
  }
}

namespace {
void cupti_start_now() {
  if (!load_driver()) {
    tracer_verbose("libcuda.so.1 not loadable: GPU capture is off (C API, NVTX and host lookups still work)");
    return;
  }
  const Config& cfg = tracer_config();
  std::vector<std::string> candidates;
  if (!cfg.cupti_path.empty()) candidates.push_back(cfg.cupti_path);
  if (*EDO_CUPTI_DEFAULT_PATH) candidates.push_back(EDO_CUPTI_DEFAULT_PATH);
  candidates.push_back("libcupti.so.13");
  candidates.push_back("libcupti.so");
  void* h = nullptr;
  std::string err;
  for (auto& c : candidates) {
    h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) break;
    const char* e = dlerror();
    if (err.empty() && e) err = e;
  }
  if (!h) {
    unavailable("cannot load libcupti: " + err + "; set EDO_CUPTI_PATH");
    return;
  }
  sym(h, cupti.cuptiSubscribe, "cuptiSubscribe");
  sym(h, cupti.cuptiEnableCallback, "cuptiEnableCallback");
  sym(h, cupti.cuptiActivityEnable, "cuptiActivityEnable");
  sym(h, cupti.cuptiActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks");
  sym(h, cupti.cuptiActivityFlushAll, "cuptiActivityFlushAll");
  sym(h, cupti.cuptiActivityGetNextRecord, "cuptiActivityGetNextRecord");
  sym(h, cupti.cuptiGetResultString, "cuptiGetResultString");
  if (!cupti.cuptiSubscribe || !cupti.cuptiEnableCallback) {
    unavailable("libcupti lacks cuptiSubscribe");
    return;
  }
  translator = new CuptiTranslator(param_info);
  tracker = new MemoryTracker();
  callback_correlations = new std::unordered_set<uint32_t>();
  param_cache = new std::unordered_map<const void*, std::vector<std::pair<size_t, size_t>>>();
  CUptiResult r = cupti.cuptiSubscribe(&cupti.sub, on_callback, nullptr);
  if (r != CUPTI_SUCCESS) {
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      unavailable("another CUPTI client (torch.profiler, Nsight Systems, a sanitizer) already holds it");
    else
      unavailable(result_string(r));
    return;
  }
  for (auto id : CuptiTranslator::runtime_cbids()) cupti.cuptiEnableCallback(1, cupti.sub, CUPTI_CB_DOMAIN_RUNTIME_API, id);
  for (auto id : CuptiTranslator::driver_cbids()) cupti.cuptiEnableCallback(1, cupti.sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
  if (cupti.cuptiActivityRegisterCallbacks && cupti.cuptiActivityEnable &&
      cupti.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS) {
    CUptiResult k = cupti.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    CUptiResult m = cupti.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2);
    if (k != CUPTI_SUCCESS) record_note("cupti.kernel_activity", "unavailable: " + result_string(k));
    if (m != CUPTI_SUCCESS) record_note("cupti.memory2_activity", "unavailable: " + result_string(m));
  }
  cupti.active = true;
  record_note("cupti", "active");
  tracer_verbose("CUPTI capture on: allocations, launches, kernel times");
}
}  // namespace

void cupti_flush() {
  if (cupti.active && cupti.cuptiActivityFlushAll && !cuda_dead_after_fork.load()) cupti.cuptiActivityFlushAll(0);
}

int cuda_lookup(int64_t table, const void* indices, uint64_t count, int type, void* stream) {
  if (cuda_dead_after_fork.load() || !load_driver()) return EDO_ERR_NO_CUDA;
  const size_t bytes = size_t(count) * (type == EDO_I64 ? 8 : 4);
  CUstream s = static_cast<CUstream>(stream);
  if (drv.cuStreamIsCapturing) {
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (drv.cuStreamIsCapturing(s, &st) == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE) {
      count_drop("device_batches_in_graph_capture", 1);
      return EDO_ERR_CUDA;
    }
  }
  CUcontext ctx = nullptr;
  if (drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) return EDO_ERR_NO_CUDA;
  Pending p{};
  {
    std::lock_guard<std::mutex> lk(stage_mu);
    if (staged_bytes + bytes > (tracer_config().max_buffer_mb << 20)) {
      count_drop("device_batches", 1);
      return EDO_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < free_buffers.size(); ++i) {
      if (free_buffers[i].capacity >= bytes && free_buffers[i].ctx == ctx) {
        p = free_buffers[i];
        free_buffers.erase(free_buffers.begin() + long(i));
        break;
      }
    }
    staged_bytes += p.host ? p.capacity : bytes;
  }
  if (!p.host) {
    p.capacity = bytes;
    p.ctx = ctx;
    if (drv.cuMemHostAlloc(&p.host, bytes, 0) != CUDA_SUCCESS) p.host = nullptr;
    if (p.host && drv.cuEventCreate(&p.event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) p.event = nullptr;
    if (!p.host || !p.event) {
      if (p.host && drv.cuMemFreeHost) drv.cuMemFreeHost(p.host);
      std::lock_guard<std::mutex> lk(stage_mu);
      staged_bytes -= bytes;
      count_drop("device_batches", 1);
      return EDO_ERR_CUDA;
    }
  }
  p.table = table;
  p.type = type;
  p.count = count;
  if (drv.cuMemcpyDtoHAsync(p.host, reinterpret_cast<CUdeviceptr>(indices), bytes, s) != CUDA_SUCCESS ||
      drv.cuEventRecord(p.event, s) != CUDA_SUCCESS) {
    std::lock_guard<std::mutex> lk(stage_mu);
    staged_bytes -= p.capacity;
    free_buffers.push_back(p);
    count_drop("device_batches", 1);
    return EDO_ERR_CUDA;
  }
  std::lock_guard<std::mutex> lk(stage_mu);
  pending.push_back(p);
  return EDO_OK;
}

void cuda_poll(bool wait_all) {
  if (cuda_dead_after_fork.load() || !drv.loaded) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (true) {
    Pending p{};
    {
      std::lock_guard<std::mutex> lk(stage_mu);
      if (pending.empty()) return;
      p = pending.front();
    }
    drv.cuCtxPushCurrent(p.ctx);
    CUresult q = drv.cuEventQuery(p.event);
    CUcontext dummy;
    drv.cuCtxPopCurrent(&dummy);
    if (q == CUDA_ERROR_NOT_READY) {
      if (!wait_all || std::chrono::steady_clock::now() > deadline) return;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    if (q == CUDA_SUCCESS) ingest_indices(p.table, p.host, p.count, p.type);
    else count_drop("device_batches", 1);
    std::lock_guard<std::mutex> lk(stage_mu);
    pending.pop_front();
    staged_bytes -= std::min(staged_bytes, uint64_t(p.capacity));
    if (free_buffers.size() < 32) free_buffers.push_back(p);
  }
}

void cuda_after_fork_child() {
  cupti_pending.store(false);
  // CUDA cannot be used in a forked child; forget the parent's buffers (not ours to free).
  cuda_dead_after_fork.store(true);
  new (&stage_mu) std::mutex();
  pending.clear();
  free_buffers.clear();
  staged_bytes = 0;
}

}  // namespace edo::capture
