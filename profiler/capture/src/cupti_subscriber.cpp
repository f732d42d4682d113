// CUPTI capture of libedo_trace.so, loaded with dlopen: callbacks for allocations and
// launches, activity records for kernel timing and MEMORY2, translated by cupti_translate.cpp.
// Attached when the process maps the CUDA runtime or driver; without a CUDA driver it is off
// (silently; EDO_VERBOSE=1 says so).
#include <cupti.h>
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "cuda_driver.h"
#include "cupti_locate.h"
#include "cupti_subscriber.h"
#include "cupti_translate.h"
#include "graph_launches.h"
#include "launch_tables.h"
#include "cuda_side.h"
#include "events.h"
#include "tracer_log.h"

#ifndef EDO_CUPTI_DEFAULT_PATH
#define EDO_CUPTI_DEFAULT_PATH ""
#endif

namespace edo::capture {
namespace {

template <class T>
void sym(void* h, T& f, const char* name) {
  f = reinterpret_cast<T>(dlsym(h, name));
}

struct Cupti {
  bool active = false;
  CUptiResult (*cuptiSubscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = nullptr;
  CUptiResult (*cuptiSubscribe_v2)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*, CUpti_SubscriberParams*) = nullptr;
  CUptiResult (*cuptiEnableCallback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId) = nullptr;
  CUptiResult (*cuptiActivityEnable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*cuptiActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*cuptiActivityFlushAll)(uint32_t) = nullptr;
  CUptiResult (*cuptiActivityDisable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*cuptiUnsubscribe)(CUpti_SubscriberHandle) = nullptr;
  CUptiResult (*cuptiActivityGetNextRecord)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*cuptiActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t*) = nullptr;
  CUptiResult (*cuptiGetResultString)(CUptiResult, const char**) = nullptr;
  CUpti_SubscriberHandle sub = nullptr;
};
Cupti cupti;
CuptiTranslator* translator = nullptr;
std::mutex tracker_mu;
MemoryTracker* tracker = nullptr;
std::unordered_set<uint32_t>* callback_correlations = nullptr;  // tracker_mu: MEMORY2 dedupe
LaunchTables* launch_tables = nullptr;  // tables of launches whose kernel record is pending
GraphLaunches* graph_launches = nullptr;  // kernels captured into CUDA graphs, and graph launches
thread_local uint64_t tl_ending_capture = 0;  // capture id seen at cuStreamEndCapture's ENTER

// Parameter layouts, cached per kernel handle; asked of the driver only (see cupti_translate.h).
std::mutex layout_mu;
std::map<std::pair<const void*, KernelHandle>, std::shared_ptr<const ParamLayout>>* layouts = nullptr;
// Bumped (under layout_mu) whenever `layouts` is cleared: each thread keeps the layouts of the
// last few kernels it launched, valid while the generation is the same, so that a launch
// takes no lock for them (issue 21 §4).
std::atomic<uint64_t> layouts_generation{1};
struct RecentLayout {
  const void* handle = nullptr;
  KernelHandle kind = KernelHandle::kFunction;
  uint64_t generation = 0;
  std::shared_ptr<const ParamLayout> layout;
};
constexpr size_t kRecentLayouts = 8;
thread_local RecentLayout* tl_layouts = nullptr;  // kRecentLayouts, leaked per thread
void clear_layouts() {  // layout_mu
  layouts->clear();
  layouts_generation.fetch_add(1, std::memory_order_release);
}

// Parameters of a kernel, from cuFuncGetParamInfo / cuKernelGetParamInfo: there is no count,
// so indices are asked until the driver says the index is past the last one.
bool query_layout(const Driver& drv, const void* h, KernelHandle kind, ParamLayout& out) {
  out.clear();
  for (size_t i = 0; i < 4096; ++i) {
    size_t off = 0, size = 0;
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    if (kind == KernelHandle::kFunction && drv.cuFuncGetParamInfo)
      r = drv.cuFuncGetParamInfo(static_cast<CUfunction>(const_cast<void*>(h)), i, &off, &size);
    else if (kind == KernelHandle::kKernel && drv.cuKernelGetParamInfo)
      r = drv.cuKernelGetParamInfo(static_cast<CUkernel>(const_cast<void*>(h)), i, &off, &size);
    if (r == CUDA_ERROR_INVALID_VALUE && i > 0) return true;  // past the last parameter
    if (r == CUDA_ERROR_INVALID_VALUE && i == 0) return true;  // a kernel without parameters
    if (r != CUDA_SUCCESS) return false;
    out.emplace_back(off, size);
  }
  return true;
}

std::shared_ptr<const ParamLayout> shared_layout(const void* h, KernelHandle kind);

std::shared_ptr<const ParamLayout> param_layout(const void* h, KernelHandle kind) {
  if (!h) return nullptr;
  if (!tl_layouts) tl_layouts = new RecentLayout[kRecentLayouts];
  RecentLayout& r = tl_layouts[(reinterpret_cast<uintptr_t>(h) >> 4) % kRecentLayouts];
  const uint64_t generation = layouts_generation.load(std::memory_order_acquire);
  if (r.handle == h && r.kind == kind && r.generation == generation) return r.layout;
  std::shared_ptr<const ParamLayout> l = shared_layout(h, kind);
  if (l) r = {h, kind, generation, l};
  return l;
}

std::shared_ptr<const ParamLayout> shared_layout(const void* h, KernelHandle kind) {
  const Driver* drv = loaded_driver();
  if (!drv) return nullptr;
  std::lock_guard<std::mutex> lk(layout_mu);
  auto key = std::make_pair(h, kind);
  auto it = layouts->find(key);
  if (it != layouts->end()) return it->second;
  ParamLayout l;
  bool ok = query_layout(*drv, h, kind, l);
  // A CUkernel may be launched through cuLaunchKernel as a CUfunction: cuFuncGetParamInfo then
  // fails, or says CUDA_ERROR_INVALID_VALUE at index 0 as for a kernel without parameters.
  // Ask again as a kernel before concluding either.
  if (kind == KernelHandle::kFunction && (!ok || l.empty())) {
    ParamLayout as_kernel;
    if (query_layout(*drv, h, KernelHandle::kKernel, as_kernel) && (!as_kernel.empty() || !ok)) {
      l = std::move(as_kernel);
      ok = true;
    }
  }
  if (!ok) return nullptr;
  if (layouts->size() > (1u << 16)) clear_layouts();  // bound: JIT compilers make many kernels
  auto shared = std::make_shared<const ParamLayout>(std::move(l));
  layouts->emplace(key, shared);
  return shared;
}

std::string kernel_name(const void* h, KernelHandle kind) {
  const Driver* drv = loaded_driver();
  const char* n = nullptr;
  if (!drv || !h) return {};
  if (kind == KernelHandle::kFunction && drv->cuFuncGetName)
    drv->cuFuncGetName(&n, static_cast<CUfunction>(const_cast<void*>(h)));
  else if (kind == KernelHandle::kKernel && drv->cuKernelGetName)
    drv->cuKernelGetName(&n, static_cast<CUkernel>(const_cast<void*>(h)));
  return n ? n : "";
}

// Registered at the first device lookup or CUPTI event, i.e. after the CUDA runtime set up
// its own exit-time teardown, so that (atexit runs in reverse order) device copies still in
// flight and CUPTI's buffered records are collected while the context is alive.
void late_exit() {
  if (!cuda_usable()) return;
  cupti_flush();
  cuda_poll(true);
  cuda_collect(true);  // the device counters, while the context is alive
}
std::once_flag late_exit_once;

void record_op(const MemOp& op) {
  int64_t delta;
  {
    std::lock_guard<std::mutex> lk(tracker_mu);
    delta = tracker->apply(op);
  }
  if (delta != 0) record_memory_event(delta, op.address, op.stream, op.device, op.api.c_str());
}

void on_graph_event(const GraphEvent& g) {
  switch (g.kind) {
    case GraphEvent::kEndCaptureBegins: {
      const Driver* drv = loaded_driver();
      tl_ending_capture = 0;
      if (drv) capture_status(*drv, reinterpret_cast<CUstream>(g.stream), &tl_ending_capture);
      break;
    }
    case GraphEvent::kCaptured:
      if (tl_ending_capture) graph_launches->end_capture(tl_ending_capture, g.graph);
      tl_ending_capture = 0;
      break;
    case GraphEvent::kInstantiated:
      graph_launches->instantiated(g.graph, g.exec);
      break;
    case GraphEvent::kLaunched:
      register_late_exit();
      for (const GraphLaunches::Kernel& k : graph_launches->launched(g.exec, g.correlation))
        record_kernel_launch(k.name, k.tables);
      break;
  }
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (in_internal_call()) return;  // the tracer's own allocations and launches
  try {
    auto out = translator->on_callback(domain, cbid, static_cast<const CUpti_CallbackData*>(data));
    if (!out.mem.empty() || out.launch) register_late_exit();
    for (auto& op : out.mem) {
      {
        std::lock_guard<std::mutex> lk(tracker_mu);
        if (callback_correlations->size() < (1u << 20)) callback_correlations->insert(op.correlation);
      }
      record_op(op);
    }
    if (out.graph) on_graph_event(*out.graph);
    if (!out.warning.empty()) {
      tracer_log(out.warning);
      record_note("cupti.chevron_args", "off: " + out.warning);
    }
    if (out.unloaded) {
      // Triton, Inductor autotuning, NVRTC unload modules; a reused handle must not find the
      // layout of the kernel that had it before (the scan would read past its arguments).
      std::lock_guard<std::mutex> lk(layout_mu);
      clear_layouts();
    }
    if (out.launch) {
      // The job's thread, at every launch: nothing here allocates once the thread has seen
      // its kernels and tables (reused per-thread lists, names by reference; issue 21 §4).
      thread_local std::vector<const std::string*>* tables = new std::vector<const std::string*>();  // leaked per thread
      auto idx = table_address_index();
      if (idx) tables_of_launch(*out.launch, *idx, *tables);
      else tables->clear();
      // A launch into a CUDA graph capture ran nothing: it counts at each launch of the graph.
      uint64_t capture_id = 0;
      const Driver* drv = loaded_driver();
      if (drv && capture_status(*drv, reinterpret_cast<CUstream>(out.launch->stream), &capture_id) == Capture::kActive) {
        std::vector<std::string> names;
        for (const std::string* t : *tables) names.push_back(*t);
        graph_launches->captured_launch(capture_id, {out.launch->name, std::move(names)});
        return;
      }
      record_kernel_launch(out.launch->name, tables->data(), tables->size());
      // Said per kernel: its launches' tables may be incomplete (e.g. a cudaLaunchKernel of a
      // kernel taking structs, whose layout the driver was never asked about).
      if (!out.launch->args_read) {
        thread_local std::string* key = new std::string();  // leaked per thread: reused
        key->assign("kernel_launches_args_unread:").append(out.launch->name);
        count_drop(key->c_str(), 1);
      }
      if (!tables->empty()) launch_tables->put(*out.launch, idx, tables->data(), tables->size());
    }
  } catch (...) {
    count_drop("cupti_callbacks", 1);
  }
}

constexpr size_t kActivityBuffer = 8 << 20;

// Delivered buffers are kept for the next request (a few): a fresh 8 MiB buffer would be
// faulted in page by page while CUPTI writes the job's records into it.
std::mutex spare_mu;
std::vector<uint8_t*>* spare_buffers = nullptr;  // spare_mu; leaked: used at exit
constexpr size_t kSpareBuffers = 4;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  {
    std::lock_guard<std::mutex> lk(spare_mu);
    if (spare_buffers && !spare_buffers->empty()) {
      *buffer = spare_buffers->back();
      spare_buffers->pop_back();
      *size = kActivityBuffer;
      *max_records = 0;
      return;
    }
  }
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, kActivityBuffer));
  *size = *buffer ? kActivityBuffer : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
  try {
    CUpti_Activity* rec = nullptr;
    while (cupti.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      if (auto k = CuptiTranslator::kernel_time(rec)) {
        if (k->name == "edo_count" || k->name == "edo_take_dirty") continue;  // the tracer's own kernels
        std::vector<std::string> tables = launch_tables->take(k->correlation);
        if (tables.empty()) tables = graph_launches->take(k->correlation, k->name);  // a graph's kernel
        record_kernel_time(k->name, k->ns, std::move(tables));
      } else if (auto m = CuptiTranslator::memory_record(rec)) {
        bool seen;
        {
          std::lock_guard<std::mutex> lk(tracker_mu);
          seen = callback_correlations->erase(m->correlation) > 0;
        }
        if (!seen && !cuda_owns_address(m->address)) record_op(*m);  // an allocation the callbacks did not see
      }
    }
  } catch (...) {
    count_drop("cupti_records", 1);
  }
  // Records CUPTI itself could not store (no buffer was free) for this context and stream.
  size_t dropped = 0;
  if (cupti.cuptiActivityGetNumDroppedRecords &&
      cupti.cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped > 0)
    count_drop("cupti_activity_records", dropped);
  {
    std::lock_guard<std::mutex> lk(spare_mu);
    if (!spare_buffers) spare_buffers = new std::vector<uint8_t*>();
    if (spare_buffers->size() < kSpareBuffers) {
      spare_buffers->push_back(buffer);
      return;
    }
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
std::mutex attach_mu;  // attaching and handing over (cupti_release) exclude each other
std::atomic<int64_t> cupti_last_poll_ns{0};
int cupti_load_attempts = 0;  // attach_mu
constexpr int kCuptiLoadAttempts = 20;  // polls 100 ms apart

// True once the CUDA runtime or driver library (`driver_only`: the driver) is mapped into
// this process.
bool cuda_in_process(bool driver_only = false) {
  struct Query {
    bool driver_only, found;
  } q{driver_only, false};
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) -> int {
        auto* q = static_cast<Query*>(data);
        const char* n = info->dlpi_name;
        if (n && ((!q->driver_only && std::strstr(n, "libcudart")) || std::strstr(n, "libcuda.so"))) {
          q->found = true;
          return 1;
        }
        return 0;
      },
      &q);
  return q.found;
}

void cupti_start_now();
}  // namespace

// At load: CUPTI is attached right away only in processes that already map the CUDA runtime
// (programs linked against it). Others (python before `import torch`, compilers and shells a
// traced job spawns) are polled by the background thread (cupti_poll), so that a process
// that never touches CUDA never loads libcuda or libcupti.
void cupti_start() {
  if (!tracer_active() || !tracer_config().cuda) return;
  // Without a driver there is nothing to attach to (an explicit EDO_CUPTI_PATH is tried anyway,
  // and a libcuda.so.1 the job already mapped: it may live elsewhere, e.g. a test's fake stack).
  if (tracer_config().cupti_path.empty() && access("/proc/driver/nvidia/version", R_OK) != 0 &&
      access("/dev/nvidiactl", F_OK) != 0 && !cuda_in_process(true)) {
    tracer_verbose("no CUDA driver: GPU capture is off (C API, NVTX and host lookups still work)");
    return;
  }
  std::lock_guard<std::mutex> lk(attach_mu);
  if (cuda_in_process()) cupti_start_now();
  else cupti_pending.store(true);
}

void cupti_poll() {
  if (!cupti_pending.load(std::memory_order_relaxed)) return;
  const int64_t now = now_ns();
  if (now - cupti_last_poll_ns.load() < 100000000) return;  // every 100 ms
  cupti_last_poll_ns.store(now);
  if (cuda_in_process()) {
    std::lock_guard<std::mutex> lk(attach_mu);
    if (cupti_pending.exchange(false)) cupti_start_now();
  }
}

namespace {
void cupti_start_now() {
  if (!load_driver()) {
    tracer_verbose("libcuda.so.1 not loadable: GPU capture is off (C API, NVTX and host lookups still work)");
    return;
  }
  const Config& cfg = tracer_config();
  // A CUPTI the job already loaded (PyTorch's Kineto links one), else the one beside the job's
  // CUDA runtime (cupti_locate.h): a second copy in the process would not know about the
  // first one's subscriber.
  void* h = nullptr;
  std::string err, used;
  for (const std::string& c : cupti_candidates(cfg.cupti_path, EDO_CUPTI_DEFAULT_PATH)) {
    if ((h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    const char* e = dlerror();
    if (err.empty() && e) err = e;
  }
  if (!h) {
    // The job may be loading its CUDA libraries right now (libcudart is mapped before the
    // libcupti beside it): try again at the next polls before giving up.
    if (++cupti_load_attempts < kCuptiLoadAttempts) {
      cupti_pending.store(true);
      return;
    }
    unavailable("cannot load libcupti: " + err + "; set EDO_CUPTI_PATH");
    return;
  }
  // Which file that is (the loader may have found a soname anywhere on its path).
  if (void* f = dlsym(h, "cuptiSubscribe")) {
    Dl_info info{};
    if (dladdr(f, &info) && info.dli_fname) used = info.dli_fname;
  }
  record_note("cupti.library", used.empty() ? "unknown" : used);
  tracer_verbose("CUPTI from " + (used.empty() ? std::string("an unknown file") : used));
  sym(h, cupti.cuptiSubscribe, "cuptiSubscribe");
  sym(h, cupti.cuptiSubscribe_v2, "cuptiSubscribe_v2");
  sym(h, cupti.cuptiEnableCallback, "cuptiEnableCallback");
  sym(h, cupti.cuptiActivityEnable, "cuptiActivityEnable");
  sym(h, cupti.cuptiActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks");
  sym(h, cupti.cuptiActivityFlushAll, "cuptiActivityFlushAll");
  sym(h, cupti.cuptiActivityDisable, "cuptiActivityDisable");
  sym(h, cupti.cuptiUnsubscribe, "cuptiUnsubscribe");
  sym(h, cupti.cuptiActivityGetNextRecord, "cuptiActivityGetNextRecord");
  sym(h, cupti.cuptiActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords");
  sym(h, cupti.cuptiGetResultString, "cuptiGetResultString");
  if ((!cupti.cuptiSubscribe && !cupti.cuptiSubscribe_v2) || !cupti.cuptiEnableCallback) {
    unavailable("libcupti lacks cuptiSubscribe");
    return;
  }
  translator = new CuptiTranslator(param_layout, kernel_name);
  tracker = new MemoryTracker();
  callback_correlations = new std::unordered_set<uint32_t>();
  launch_tables = new LaunchTables();
  graph_launches = new GraphLaunches();
  layouts = new std::map<std::pair<const void*, KernelHandle>, std::shared_ptr<const ParamLayout>>();
  // cuptiSubscribe_v2 (CUDA 12.6+) names us to other tools and tells us who holds CUPTI.
  char holder[256] = {};
  CUptiResult r;
  if (cupti.cuptiSubscribe_v2) {
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "edo";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = sizeof holder;
    r = cupti.cuptiSubscribe_v2(&cupti.sub, on_callback, nullptr, &params);
  } else {
    r = cupti.cuptiSubscribe(&cupti.sub, on_callback, nullptr);
  }
  if (r != CUPTI_SUCCESS) {
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      unavailable(holder[0] ? std::string("held by ") + holder
                            : "another CUPTI client (torch.profiler, Nsight Systems, a sanitizer) already holds it");
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
  if (cupti.active && cupti.cuptiActivityFlushAll && cuda_usable()) cupti.cuptiActivityFlushAll(0);
}

// Another tool needs CUPTI now (torch.profiler): what edo buffered is collected, then its
// subscription and activities are given up. Before edo attached: it never will.
void cupti_release(const std::string& to_tool) {
  if (!tracer_active()) return;
  static std::once_flag once;
  std::call_once(once, [&] {
    std::lock_guard<std::mutex> lk(attach_mu);
    const bool was_pending = cupti_pending.exchange(false);
    if (cupti.active) {
      cupti.cuptiActivityFlushAll(1);  // forced: records of kernels still running too
      if (cupti.cuptiActivityDisable) {
        cupti.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        cupti.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMORY2);
      }
      if (cupti.cuptiUnsubscribe) cupti.cuptiUnsubscribe(cupti.sub);
      cupti.active = false;
    } else if (!was_pending) {
      return;  // edo held nothing
    }
    tracer_log("CUPTI handed over to " + to_tool +
               ": GPU allocations and kernels are not traced from here on; tables, lookups (host and device) "
               "and NVTX ranges are still recorded");
    record_note("cupti", "released to " + to_tool);
  });
}

void register_late_exit() {
  std::call_once(late_exit_once, [] { atexit(late_exit); });
}

void cupti_after_fork_child() { cupti_pending.store(false); }

}  // namespace edo::capture
