// The CUPTI side's state (cupti_subscriber.cpp), in the two lifetimes of the library's state
// (process.h):
//  * CuptiProcess: what the process keeps for its whole life, across fork() too: the CUPTI
//    entry points dlopen'ed once, the subscription, attaching and handing over. CUPTI does not
//    work in a forked child of a CUDA process (the CUDA side is dead there, cuda_side.h): the
//    child keeps the parent's table and subscription as the fork copied them, and attaches
//    and flushes no more (edo_release_gpu_capture there still gives up the copied
//    subscription, as it did before). Its attach mutex is taken across fork() (lifecycle.cpp),
//    so a child never inherits it held.
//  * CuptiRun: what the subscription collects for one process (parameter layouts, the
//    translator's handles, live allocations, launches waiting for their kernel records, graph
//    launches, spare activity buffers). Its locks are held across driver calls (a parameter
//    layout query) and by CUPTI's worker thread, so they cannot be taken across fork(): a
//    forked child gets a new CuptiRun, and the parent's stays behind as the fork copied it
//    (its locks may be held by threads the child does not have; nothing of the parent's
//    pending launches, allocations or correlation ids leaks into the child's report).
// Neither is ever freed once in use: CUPTI's callbacks (its worker thread, the exit-time flush) use them
// until the process is gone, after static destructors have run.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cupti_translate.h"
#include "graph_launches.h"
#include "launch_tables.h"

namespace edo::capture {

// The CUPTI entry points edo uses, resolved with dlsym from the libcupti it loaded.
struct CuptiApi {
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
};

struct CuptiRun;

// Constant-initialised (constinit, trivially destructible): the library's constructor
// (priority 101) attaches before dynamic initialisers would run, and exit handlers use it
// after destructors would have run.
struct CuptiProcess {
  CuptiApi api;  // set under attach_mu before subscribing, never changed again: read freely
  CUpti_SubscriberHandle sub = nullptr;  // attach_mu
  std::atomic<bool> active{false};       // subscribed, not handed over
  // Attaching (cupti_start, cupti_poll), handing over (cupti_release) exclude each other.
  std::mutex attach_mu;
  std::atomic<bool> pending{false};  // waiting for the job to map CUDA (cupti_poll)
  std::atomic<int64_t> last_poll_ns{0};
  int load_attempts = 0;  // attach_mu
  bool released = false;  // attach_mu: handed over to another tool (once per process)
  // The exit handler that collects CUPTI's and the device side's records (once per process;
  // an atomic, not a once_flag: a flag copied "in progress" by a fork would hang the child).
  std::atomic<bool> late_exit_registered{false};
  // This process's run: made at attach; in a forked child of a process that had one, the
  // parent's is dropped and a new one is made at the child's first callback (child_run_due).
  std::atomic<CuptiRun*> run{nullptr};
  std::atomic<bool> child_run_due{false};
  // The parent's run in a forked child, left as the fork copied it: kept reachable (not a
  // leak for LeakSanitizer: memory the fork copied, not the child's to free).
  CuptiRun* parents_run = nullptr;
};

// Parameter layouts, cached per kernel handle (asked of the driver only: cupti_translate.h).
// A launch takes no lock for a kernel its thread launched recently: each thread keeps the
// layouts of its last few kernels (thread-local), valid while they came from this cache and
// its generation is the same. The generation changes whenever the cache is cleared (a module
// unload: a handle may be reused for another kernel); a new cache (a forked child's) is another
// owner, so nothing a thread kept from the parent's is used in the child.
class LayoutCache {
 public:
  // The layout of kernel `h`, or nullptr when the driver cannot describe it.
  std::shared_ptr<const ParamLayout> get(const void* h, KernelHandle kind);
  // A module or library was unloaded: every handle may be reused.
  void clear();

 private:
  std::shared_ptr<const ParamLayout> shared(const void* h, KernelHandle kind);
  void clear_locked();
  // Held across the driver's parameter queries (one query per new kernel): never taken
  // across fork(); a forked child gets a new cache with its run.
  std::mutex mu_;
  std::map<std::pair<const void*, KernelHandle>, std::shared_ptr<const ParamLayout>> layouts_;  // mu_
  std::atomic<uint64_t> generation_{1};  // changed under mu_
};

// Activity buffers CUPTI delivered, kept for its next requests (a few): a fresh 8 MiB buffer
// would be faulted in page by page while CUPTI writes the job's records into it.
class SpareBuffers {
 public:
  static constexpr size_t kBytes = size_t{8} << 20;
  static constexpr size_t kKept = 4;
  // A kept buffer (kBytes), or nullptr.
  uint8_t* take();
  // Keeps `b` when fewer than kKept are kept; false: the caller frees it.
  bool keep(uint8_t* b);

 private:
  std::mutex mu_;
  std::vector<uint8_t*> buffers_;  // mu_
};

// What one process's subscription collects. Made when CUPTI is attached, and anew in a forked
// child (the parent's is abandoned there, see above).
struct CuptiRun {
  CuptiRun();
  CuptiRun(const CuptiRun&) = delete;
  CuptiRun& operator=(const CuptiRun&) = delete;

  LayoutCache layouts;
  CuptiTranslator translator;  // reads layouts through `layouts` (declared before it)
  std::mutex tracker_mu;
  MemoryTracker tracker;                               // tracker_mu
  std::unordered_set<uint32_t> callback_correlations;  // tracker_mu: MEMORY2 records' dedupe
  LaunchTables launch_tables;    // tables of launches whose kernel record is pending
  GraphLaunches graph_launches;  // kernels captured into CUDA graphs, and graph launches
  SpareBuffers spare_buffers;
  // In a forked child: the run abandoned before this one (a fork of a fork), kept reachable.
  CuptiRun* older = nullptr;
};

}  // namespace edo::capture
