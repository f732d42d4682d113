// CUPTI capture of libedo_trace.so, loaded with dlopen: callbacks for allocations and
// launches, activity records for kernel timing and MEMORY2, translated by cupti_translate.cpp.
// Attached when the process maps the CUDA runtime or driver; without a CUDA driver it is off
// (silently; EDO_VERBOSE=1 says so). Its state is in cupti_state.h: what the process keeps
// across fork() (CuptiProcess) and what a forked child replaces (CuptiRun).
#include <cupti.h>
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cuda_driver.h"
#include "cupti_locate.h"
#include "cupti_state.h"
#include "cupti_subscriber.h"
#include "dl_symbol.h"
#include "cuda_side.h"
#include "events.h"
#include "tracer_log.h"

#ifndef EDO_CUPTI_DEFAULT_PATH
#define EDO_CUPTI_DEFAULT_PATH ""
#endif

namespace edo::capture {
namespace {

// The process's CUPTI side (cupti_state.h): kept for the process's life, across fork().
constinit CuptiProcess side_storage;
CuptiProcess* const side = &side_storage;
const CuptiApi& api = side_storage.api;

// This process's run (cupti_state.h). A forked child's is made at its first CUPTI callback:
// most children (DataLoader workers) never launch anything, and a run preallocates its
// pending-launch ring (about 1 MiB). Two threads racing there keep one of the two.
CuptiRun* current_run() {
  CuptiRun* r = side->run.load(std::memory_order_acquire);
  if (r || !side->child_run_due.load(std::memory_order_acquire)) return r;
  auto* fresh = new CuptiRun();
  if (side->run.compare_exchange_strong(r, fresh, std::memory_order_acq_rel)) return fresh;
  delete fresh;  // never seen by anyone
  return r;
}

thread_local uint64_t tl_ending_capture = 0;  // capture id seen at cuStreamEndCapture's ENTER

// Registered at the first device lookup or CUPTI event, i.e. after the CUDA runtime set up
// its own exit-time teardown, so that (atexit runs in reverse order) device copies still in
// flight and CUPTI's buffered records are collected while the context is alive.
void late_exit() {
  if (!cuda_usable()) return;
  cupti_flush();
  cuda_poll(true);
  cuda_collect(true);  // the device counters, while the context is alive
}

void record_op(CuptiRun& run, const MemOp& op) {
  int64_t delta;
  {
    std::lock_guard<std::mutex> lk(run.tracker_mu);
    delta = run.tracker.apply(op);
  }
  if (delta != 0) record_memory_event(delta, op.address, op.stream, op.device, op.api.c_str());
}

void on_graph_event(CuptiRun& run, const GraphEvent& g) {
  switch (g.kind) {
    case GraphEvent::kEndCaptureBegins: {
      const Driver* drv = loaded_driver();
      tl_ending_capture = 0;
      if (drv) capture_status(*drv, reinterpret_cast<CUstream>(g.stream), &tl_ending_capture);
      break;
    }
    case GraphEvent::kCaptured:
      if (tl_ending_capture) run.graph_launches.end_capture(tl_ending_capture, g.graph);
      tl_ending_capture = 0;
      break;
    case GraphEvent::kInstantiated:
      run.graph_launches.instantiated(g.graph, g.exec);
      break;
    case GraphEvent::kLaunched:
      register_late_exit();
      for (const GraphLaunches::Kernel& k : run.graph_launches.launched(g.exec, g.correlation))
        record_kernel_launch(k.name, k.tables);
      break;
  }
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (in_internal_call()) return;  // the tracer's own allocations and launches
  // This process's run (a forked child's own: its parent's may be left with locks held).
  CuptiRun* run = current_run();
  if (!run) return;
  try {
    auto out = run->translator.on_callback(domain, cbid, static_cast<const CUpti_CallbackData*>(data));
    if (!out.mem.empty() || out.launch) register_late_exit();
    for (auto& op : out.mem) {
      {
        std::lock_guard<std::mutex> lk(run->tracker_mu);
        if (run->callback_correlations.size() < (1u << 20)) run->callback_correlations.insert(op.correlation);
      }
      record_op(*run, op);
    }
    if (out.graph) on_graph_event(*run, *out.graph);
    if (!out.warning.empty()) {
      tracer_log(out.warning);
      record_note("cupti.chevron_args", "off: " + out.warning);
    }
    if (out.unloaded) {
      // Triton, Inductor autotuning, NVRTC unload modules; a reused handle must not find the
      // layout of the kernel that had it before (the scan would read past its arguments).
      run->layouts.clear();
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
        run->graph_launches.captured_launch(capture_id, {out.launch->name, std::move(names)});
        return;
      }
      record_kernel_launch(out.launch->name, tables->data(), tables->size());
      // Said per kernel: its launches' tables may be incomplete (e.g. a cudaLaunchKernel of a
      // kernel taking structs, whose layout the driver was never asked about).
      if (!out.launch->args_read) {
        count_family_drop("kernel_launches_args_unread:", out.launch->name, 1);
      }
      if (!tables->empty()) run->launch_tables.put(*out.launch, idx, tables->data(), tables->size());
    }
  } catch (...) {
    count_drop("cupti_callbacks", 1);
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  CuptiRun* run = current_run();
  *buffer = run ? run->spare_buffers.take() : nullptr;
  if (!*buffer) *buffer = static_cast<uint8_t*>(aligned_alloc(8, SpareBuffers::kBytes));
  *size = *buffer ? SpareBuffers::kBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
  CuptiRun* run = current_run();
  try {
    CUpti_Activity* rec = nullptr;
    while (run && api.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      if (auto k = CuptiTranslator::kernel_time(rec)) {
        if (k->name == "edo_count" || k->name == "edo_take_dirty") continue;  // the tracer's own kernels
        std::vector<std::string> tables = run->launch_tables.take(k->correlation);
        if (tables.empty()) tables = run->graph_launches.take(k->correlation, k->name);  // a graph's kernel
        record_kernel_time(k->name, k->ns, std::move(tables));
      } else if (auto m = CuptiTranslator::memory_record(rec)) {
        bool seen;
        {
          std::lock_guard<std::mutex> lk(run->tracker_mu);
          seen = run->callback_correlations.erase(m->correlation) > 0;
        }
        if (!seen && !cuda_owns_address(m->address)) record_op(*run, *m);  // an allocation the callbacks did not see
      }
    }
  } catch (...) {
    count_drop("cupti_records", 1);
  }
  // Records CUPTI itself could not store (no buffer was free) for this context and stream.
  size_t dropped = 0;
  if (api.cuptiActivityGetNumDroppedRecords &&
      api.cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped > 0)
    count_drop("cupti_activity_records", dropped);
  if (run && run->spare_buffers.keep(buffer)) return;
  free(buffer);
}

std::string result_string(CUptiResult r) {
  const char* s = nullptr;
  if (api.cuptiGetResultString) api.cuptiGetResultString(r, &s);
  return s ? s : "CUPTI error " + std::to_string(int(r));
}

void unavailable(const std::string& why) {
  const std::string line = "CUPTI unavailable (" + why +
                           "): GPU allocations and kernels are not traced; C API lookups (host and device), "
                           "NVTX ranges and tables are still recorded";
  tracer_log(line);
  record_note("cupti", "unavailable: " + why);
}

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

// Caller holds side->attach_mu.
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
    if (++side->load_attempts < kCuptiLoadAttempts) {
      side->pending.store(true);
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
  CuptiApi& a = side->api;
  load_symbol(h, a.cuptiSubscribe, "cuptiSubscribe");
  load_symbol(h, a.cuptiSubscribe_v2, "cuptiSubscribe_v2");
  load_symbol(h, a.cuptiEnableCallback, "cuptiEnableCallback");
  load_symbol(h, a.cuptiActivityEnable, "cuptiActivityEnable");
  load_symbol(h, a.cuptiActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks");
  load_symbol(h, a.cuptiActivityFlushAll, "cuptiActivityFlushAll");
  load_symbol(h, a.cuptiActivityDisable, "cuptiActivityDisable");
  load_symbol(h, a.cuptiUnsubscribe, "cuptiUnsubscribe");
  load_symbol(h, a.cuptiActivityGetNextRecord, "cuptiActivityGetNextRecord");
  load_symbol(h, a.cuptiActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords");
  load_symbol(h, a.cuptiGetResultString, "cuptiGetResultString");
  if ((!a.cuptiSubscribe && !a.cuptiSubscribe_v2) || !a.cuptiEnableCallback) {
    unavailable("libcupti lacks cuptiSubscribe");
    return;
  }
  // The run exists before the first callback can come (leaked: see cupti_state.h).
  side->run.store(new CuptiRun(), std::memory_order_release);
  // cuptiSubscribe_v2 (CUDA 12.6+) names us to other tools and tells us who holds CUPTI.
  char holder[256] = {};
  CUptiResult r;
  if (a.cuptiSubscribe_v2) {
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "edo";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = sizeof holder;
    r = a.cuptiSubscribe_v2(&side->sub, on_callback, nullptr, &params);
  } else {
    r = a.cuptiSubscribe(&side->sub, on_callback, nullptr);
  }
  if (r != CUPTI_SUCCESS) {
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      unavailable(holder[0] ? std::string("held by ") + holder
                            : "another CUPTI client (torch.profiler, Nsight Systems, a sanitizer) already holds it");
    else
      unavailable(result_string(r));
    return;
  }
  for (auto id : CuptiTranslator::runtime_cbids()) a.cuptiEnableCallback(1, side->sub, CUPTI_CB_DOMAIN_RUNTIME_API, id);
  for (auto id : CuptiTranslator::driver_cbids()) a.cuptiEnableCallback(1, side->sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
  if (a.cuptiActivityRegisterCallbacks && a.cuptiActivityEnable &&
      a.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS) {
    CUptiResult k = a.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    CUptiResult m = a.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2);
    if (k != CUPTI_SUCCESS) record_note("cupti.kernel_activity", "unavailable: " + result_string(k));
    if (m != CUPTI_SUCCESS) record_note("cupti.memory2_activity", "unavailable: " + result_string(m));
  }
  side->active.store(true);
  record_note("cupti", "active");
  tracer_verbose("CUPTI capture on: allocations, launches, kernel times");
}

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
  std::lock_guard<std::mutex> lk(side->attach_mu);
  if (cuda_in_process()) cupti_start_now();
  else side->pending.store(true);
}

void cupti_poll() {
  if (!side->pending.load(std::memory_order_relaxed)) return;
  const int64_t now = now_ns();
  if (now - side->last_poll_ns.load() < 100000000) return;  // every 100 ms
  side->last_poll_ns.store(now);
  if (cuda_in_process()) {
    std::lock_guard<std::mutex> lk(side->attach_mu);
    if (side->pending.exchange(false)) cupti_start_now();
  }
}

void cupti_flush() {
  if (side->active.load() && api.cuptiActivityFlushAll && cuda_usable()) api.cuptiActivityFlushAll(0);
}

// Another tool needs CUPTI now (torch.profiler): what edo buffered is collected, then its
// subscription and activities are given up, once per process; a second caller waits for the
// first (attach_mu) and returns. Before edo attached: it never will.
void cupti_release(const std::string& to_tool) {
  if (!tracer_active()) return;
  std::lock_guard<std::mutex> lk(side->attach_mu);
  if (side->released) return;
  side->released = true;
  const bool was_pending = side->pending.exchange(false);
  if (side->active.load()) {
    api.cuptiActivityFlushAll(1);  // forced: records of kernels still running too
    if (api.cuptiActivityDisable) {
      api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMORY2);
    }
    if (api.cuptiUnsubscribe) api.cuptiUnsubscribe(side->sub);
    side->active.store(false);
  } else if (!was_pending) {
    return;  // edo held nothing
  }
  tracer_log("CUPTI handed over to " + to_tool +
             ": GPU allocations and kernels are not traced from here on; tables, lookups (host and device) "
             "and NVTX ranges are still recorded");
  record_note("cupti", "released to " + to_tool);
}

void register_late_exit() {
  if (!side->late_exit_registered.exchange(true)) atexit(late_exit);
}

// fork(): attaching and handing over are finished before the process is copied (lifecycle.cpp
// takes this after the background thread's round lock, before the others).
void cupti_before_fork() { side->attach_mu.lock(); }
void cupti_after_fork_parent() { side->attach_mu.unlock(); }

void cupti_after_fork_child() {
  side->attach_mu.unlock();
  // CUPTI does not work in a forked child of a CUDA process: no attach from now on (the
  // CUDA side is dead here, so there is no flush either).
  side->pending.store(false);
  // A new run, when the parent had one: callbacks still arriving in the child (its own
  // launches and allocations) must not wait on a lock a thread of the parent held at the
  // fork (a launch callback queries the driver under the layout lock) nor find the parent's
  // pending launches, live allocations or correlation ids. The parent's run is left as the
  // fork copied it (leaked: not ours to free while its locks may be held); the child's is
  // made at its first callback (current_run()).
  if (CuptiRun* parents = side->run.exchange(nullptr)) {
    parents->older = side->parents_run;  // a fork of a fork: its grandparent's
    side->parents_run = parents;
    side->child_run_due.store(true, std::memory_order_release);
  }
}

}  // namespace edo::capture
