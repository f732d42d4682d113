// Device indices counted on the device (issue 9.3): edo_table_lookup(EDO_CUDA) launches the
// counting kernel (device/count_kernel.h; an embedded fatbin, loaded with cuModuleLoadData and
// launched with cuLaunchKernel: no CUDA runtime in libedo_trace.so) on the caller's stream,
// right after the caller's own work. It adds into the table's device-resident counters
// (uint32 per row, or count-min cells + HyperLogLog registers above EDO_EXACT_ROWS) and
// writes the batch's SHARDS sample and footprint window into a region of a device arena.
//
// The caller never waits: the region is copied to pinned host memory on the tracer's own
// stream, which waits for an event recorded after the kernel (cuStreamWaitEvent: the caller's
// stream is not held back), and the background thread takes finished regions in order. At
// each flush the counters that changed are copied on the tracer's stream (the kernel marks the
// 4 KiB blocks it touched in a device-side dirty bitmap; the flush takes the bitmap first, then
// copies only those blocks, into pinned memory), and their deltas, with the samples since the
// last flush, become a stats::CountedSegment. The final flush first waits
// (at most 2 s) for every batch, so the counts are exact.
//
// The tracer's device allocations (counters, arena) and launches are its own: their CUPTI
// callbacks are ignored (InternalCall) and their MEMORY2 records are recognised (owns()).
// They come from cuMemAlloc, outside the job's allocator, so they are part of what the job
// sees: bounded by `device_budget` (EDO_MAX_DEVICE_MB) and reported (totals().device_bytes,
// the edo.device_bytes note, `edo report`). A table whose counters would not fit is refused
// on the device (device_memory_bound_tables) and its batches go the host-copy way.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "cuda_driver.h"
#include "edo/stats/table_stats.h"

namespace edo::capture {

namespace device {
struct CountParams;  // the counting kernel's parameters (device/count_kernel.h)
}

struct TableInfo;

class DeviceCounting {
 public:
  // `image`: the counting module (fatbin) to load in each context; `arena_bytes`: the sample
  // arena per context (device memory, and as much pinned host memory); `device_budget`: bound
  // on all device memory this object allocates (bytes).
  DeviceCounting(const Driver& drv, const void* image, uint64_t arena_bytes, const stats::StatsConfig& cfg,
                 uint64_t device_budget);
  DeviceCounting(const DeviceCounting&) = delete;
  DeviceCounting& operator=(const DeviceCounting&) = delete;

  static constexpr int kUnavailable = 1;  // lookup(): use the host-copy path instead
  // Counts one batch on `stream` (in the calling thread's current context): EDO_OK, a negative
  // edo error code, or kUnavailable (no module for this context, or no device memory for the
  // table's counters).
  int lookup(const TableInfo& t, const void* indices, uint64_t n, int type, CUstream stream);

  // Background thread: takes the batches whose sample copy has finished (in order); with
  // `wait_all`, waits up to 2 s for all of them.
  void poll(bool wait_all);

  // Hands each table counted since the last call its segment (counter deltas, sample,
  // windows). `final`: the process is ending; waits for every batch first.
  using Ingest = std::function<void(uint32_t table, const stats::CountedSegment&)>;
  void collect(bool final, const Ingest& ingest);

  // True when `address` is in one of the tracer's own device allocations (CUPTI's buffer
  // callback asks; it takes mu_, which no thread holds across a driver call).
  bool owns(uint64_t address) const;

  struct Totals {
    uint64_t batches = 0, indices = 0, samples = 0, samples_dropped = 0, batches_without_sample = 0;
    uint64_t captured_batches = 0;  // counting kernels put into CUDA graph captures
    uint64_t device_bytes = 0;      // edo's own device memory (cuMemAlloc), now (never freed before exit)
    uint64_t pinned_bytes = 0;      // edo's own pinned host memory (cuMemHostAlloc)
    uint64_t bound_tables = 0;      // tables refused on the device by the bound
  };
  Totals totals() const;

 private:
  struct Context;
  struct Table;
  struct Batch;
  // Set-up (module load, arena, counters: driver calls) of the stream's context and of the
  // table, under setup_mu_ alone; what it makes is published under mu_. Never inside a CUDA
  // graph capture. Leaves c / t null when they cannot be had.
  void set_up(CUcontext ctx, const TableInfo& info, Context*& c, Table*& t);
  // lookup()'s steps (device_counting.cpp says what each checks or plans).
  bool past_the_buffer(const void* indices, uint64_t n, int type) const;
  bool find_state(CUcontext ctx, const TableInfo& info, Context*& c, Table*& t);
  void plan_sample(Context& c, Table& t, uint64_t n, Batch& b, device::CountParams& p);  // mu_
  std::unique_ptr<Context> make_context(CUcontext ctx);            // setup_mu_
  void note_device_name();                                          // setup_mu_, in the context
  std::unique_ptr<Table> make_table(const TableInfo& info, Context* c);  // setup_mu_
  int launch_captured(Context& c, Table& t, const void* indices, uint64_t n, int type, CUstream stream);
  void params_for(const Table& t, const void* indices, uint64_t n, int type, void* out) const;
  bool reserve(Context* c, uint64_t bytes, uint64_t& off);          // mu_
  void take(Batch& b);                                             // mu_ (a finished batch)
  void drop(Batch& b);                                             // mu_ (a batch that counted nothing)
  CUdeviceptr allocate(uint64_t bytes);                            // setup_mu_ (counted as own, within the budget)
  // collect_mu_: the table's counters as they are now into its host copy, only the blocks the
  // dirty bitmap names (all of them after a failed copy); t.runs lists the blocks copied.
  bool copy_counters(Table& t);

  const Driver& drv_;
  const void* image_;
  const uint64_t arena_bytes_;
  const stats::StatsConfig cfg_;
  const uint64_t device_budget_;
  // Lock order: collect_mu_, poll_mu_, setup_mu_, mu_. mu_ guards the bookkeeping only and is
  // never held across a driver call (CUPTI's buffer callback takes it through owns(), and may
  // run while a driver call of any thread waits for it). setup_mu_ is held across the one-time
  // set-up's driver calls; nothing a callback runs takes it.
  mutable std::mutex mu_;
  std::mutex setup_mu_;
  std::mutex poll_mu_;     // one poll at a time
  std::mutex collect_mu_;  // one collect at a time
  std::map<CUcontext, std::unique_ptr<Context>> contexts_;  // mu_
  std::map<uint32_t, std::unique_ptr<Table>> tables_;       // mu_
  std::deque<Batch> in_flight_;                             // mu_, submission order
  std::vector<CUevent> free_events_;                        // mu_
  std::set<std::pair<uint64_t, uint64_t>> own_;             // mu_: [begin, end) of own allocations
  Totals totals_;                                           // mu_
};

}  // namespace edo::capture
