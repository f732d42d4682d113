// Device-index lookups of the process: counted on the device (device_counting.*) when the
// counting module loads in the caller's context, else copied to the host and counted there
// (device_staging.*).
#include <algorithm>
#include <atomic>
#include <mutex>

#include "cupti_subscriber.h"
#include "device_counting.h"
#include "device_staging.h"
#include "edo/edo.h"
#include "process.h"
#include "api_backends.h"
#include "cuda_side.h"
#include "events.h"

#if defined(EDO_HAVE_DEVICE_COUNTING)
namespace edo::capture {
extern const unsigned char kCountFatbin[];  // device_count_fatbin.cpp, generated at build time
}
#endif

namespace edo::capture {
namespace {

// The device side's process-wide state: made at the first device batch, never freed (its
// device handles live until exit), and in a forked child abandoned as the fork copied it
// (cuda_after_fork_child: CUDA cannot be used there, and its locks may be held by threads the
// child does not have). One object, so that what the child gives up is all in one place.
struct DeviceSide {
  std::mutex setup_mu;
  std::atomic<DeviceStaging*> staging{nullptr};
  std::atomic<DeviceCounting*> counting{nullptr};
  std::atomic<bool> counting_tried{false};
  // What edo's own device memory was last noted as (a note when it changes), and the final note.
  std::atomic<uint64_t> noted_device{0}, noted_pinned{0};
  std::atomic<bool> noted_final{false};
};
// Constant-initialised (constinit: no dynamic initialiser) and trivially destructible: the
// library's constructor (priority 101) starts the background thread, which polls the device
// side, before this file's dynamic initialisers would run, and exit handlers poll it after
// destructors would have run.
constinit DeviceSide device_side_storage;
DeviceSide* const device_side = &device_side_storage;
std::atomic<bool> cuda_dead_after_fork{false};

DeviceStaging* staging() {
  if (DeviceStaging* s = device_side->staging.load(std::memory_order_acquire)) return s;
  const Driver* drv = load_driver();
  if (!drv) return nullptr;
  std::lock_guard<std::mutex> lk(device_side->setup_mu);
  if (!device_side->staging.load()) device_side->staging.store(new DeviceStaging(*drv, tracer_config().max_buffer_mb << 20));
  return device_side->staging.load();
}

DeviceCounting* counting() {
  if (device_side->counting_tried.load(std::memory_order_acquire)) return device_side->counting.load(std::memory_order_acquire);
  std::lock_guard<std::mutex> lk(device_side->setup_mu);
  if (device_side->counting_tried.load()) return device_side->counting.load();
#if defined(EDO_HAVE_DEVICE_COUNTING)
  const Driver* drv = load_driver();
  if (drv && drv->can_count_on_device()) {
    // The arena takes at most a quarter of EDO_MAX_DEVICE_MB: the rest is for the counters.
    const uint64_t device_budget = tracer_config().max_device_mb << 20;
    const uint64_t arena = std::min<uint64_t>({tracer_config().max_buffer_mb << 20, uint64_t{32} << 20, device_budget / 4});
    device_side->counting.store(new DeviceCounting(*drv, kCountFatbin, arena, process()->stats, device_budget));
  }
#endif
  device_side->counting_tried.store(true, std::memory_order_release);
  return device_side->counting.load();
}

}  // namespace

bool cuda_usable() { return !cuda_dead_after_fork.load(); }

int cuda_lookup(int64_t table, const void* indices, uint64_t count, int type, void* stream) {
  if (!cuda_usable()) return EDO_ERR_NO_CUDA;
  const TableInfo* t = process()->registry.get(table);
  if (!t) return EDO_ERR_BAD_HANDLE;
  register_late_exit();
  if (DeviceCounting* c = counting()) {
    {
      Session& s = session();
      std::lock_guard<std::mutex> lk(s.counts.mutex());
      if (!s.counts.admit_counted_locked(*t, count, &process()->registry)) return EDO_OK;
    }
    const int rc = c->lookup(*t, indices, count, type, static_cast<CUstream>(stream));
    if (rc != DeviceCounting::kUnavailable) return rc;
  }
  DeviceStaging* s = staging();
  if (!s) return EDO_ERR_NO_CUDA;
  return s->lookup(table, indices, count, type, static_cast<CUstream>(stream));
}

void cuda_poll(bool wait_all) {
  if (!cuda_usable()) return;
  if (DeviceCounting* c = device_side->counting.load(std::memory_order_acquire)) c->poll(wait_all);
  if (DeviceStaging* s = device_side->staging.load(std::memory_order_acquire)) s->poll(wait_all, ingest_indices);
}

void cuda_collect(bool final) {
  if (!cuda_usable()) return;
  DeviceCounting* c = device_side->counting.load(std::memory_order_acquire);
  if (!c) return;
  c->collect(final, [](uint32_t table, const stats::CountedSegment& seg) { ingest_counted(table, seg); });
  const auto t = c->totals();
  // edo's own device memory is part of what the job sees (`edo report`): noted when it changes.
  if (t.device_bytes != device_side->noted_device.exchange(t.device_bytes)) record_note("edo.device_bytes", std::to_string(t.device_bytes));
  if (t.pinned_bytes != device_side->noted_pinned.exchange(t.pinned_bytes)) record_note("edo.pinned_bytes", std::to_string(t.pinned_bytes));
  if (final && !device_side->noted_final.exchange(true)) {
    if (t.batches)
      record_note("device_counting", std::to_string(t.batches) + " batches, " + std::to_string(t.indices) +
                                         " indices counted on the device; " + std::to_string(t.samples) +
                                         " sampled references reached the host; " +
                                         std::to_string(t.batches_without_sample) + " batches without an LRU sample (arena full), " +
                                         std::to_string(t.samples_dropped) + " samples over a batch's room" +
                                         (t.captured_batches ? "; " + std::to_string(t.captured_batches) +
                                                                   " batches inside CUDA graph captures (counted at every replay)"
                                                             : std::string()));
  }
}

bool cuda_owns_address(uint64_t address) {
  if (!cuda_usable()) return false;  // a forked child: the parent's objects are not touched
  DeviceCounting* c = device_side->counting.load(std::memory_order_acquire);
  return c && c->owns(address);
}

void cuda_before_fork() { cupti_before_fork(); }
void cuda_after_fork_parent() { cupti_after_fork_parent(); }

void cuda_after_fork_child() {
  // CUDA cannot be used in a forked child: the parent's device state (buffers, events, its
  // locks) stays behind as the fork copied it, not ours to free or touch.
  cuda_dead_after_fork.store(true);
  cupti_after_fork_child();
}

}  // namespace edo::capture
