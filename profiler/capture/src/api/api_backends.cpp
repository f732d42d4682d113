// The C API's back ends (api.cpp wraps them): table registration, host and device lookups
// (queued for the background thread, or counted inline), steps, extra bytes.
#include "edo/edo.h"
#include "nvtx_ranges.h"
#include "process.h"
#include "api_backends.h"
#include "cuda_side.h"
#include "events.h"
#include "lifecycle.h"
#include "nvtx_ranges.h"

namespace edo::capture {

int64_t api_register(const char* name, const void* base, uint64_t rows, uint32_t dim, int dtype,
                     int device) {
  ensure_initialized();
  Process& p = *process();
  const int64_t id = p.registry.add(name, base, rows, dim, dtype, device);
  if (id == EDO_ERR_INVALID_ARGUMENT) return id;
  if (p.active) {
    ensure_background_thread();
    session().sink.connect_early();  // sink.h: edo record can ask for a flush from now on
  }
  session().quiet.store(false);
  return id;
}

int api_lookup(int64_t table, const void* indices, uint64_t count, int type, int device,
               void* stream) {
  Process* p = process();
  const TableInfo* t = p ? p->registry.get(table) : nullptr;
  if (!t) return EDO_ERR_BAD_HANDLE;
  if ((type != EDO_I32 && type != EDO_I64) || (device != EDO_HOST && device != EDO_CUDA))
    return EDO_ERR_INVALID_ARGUMENT;
  if (count == 0) return EDO_OK;
  if (!indices) return EDO_ERR_INVALID_ARGUMENT;
  if (!p->active) return EDO_OK;
  ensure_background_thread();
  Session& s = session();
  s.sink.connect_early();  // a forked worker's first lookup: known to edo record from now on
  if (s.quiet.load(std::memory_order_relaxed)) s.quiet.store(false);
  if (RangeTotals* r = innermost_range()) {
    r->lookups.fetch_add(count, std::memory_order_relaxed);
    s.ranges.mark_dirty();
  }
  if (device == EDO_CUDA) return cuda_lookup(table, indices, count, type, stream);
  if (!p->async.load(std::memory_order_relaxed) || !s.bg_running.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lk(s.counts.mutex());
    s.counts.add_locked(*t, indices, count, type, &p->registry);
    return EDO_OK;
  }
  switch (s.queue.push_copy(table, indices, count, type, type == EDO_I64 ? 8 : 4)) {
    case IngestQueue::Push::kOk:
      return EDO_OK;
    case IngestQueue::Push::kFull:
      s.events.count_drop("batches", 1);
      s.events.count_drop("indices", count);
      return EDO_ERR_NO_MEMORY;
    case IngestQueue::Push::kNoMemory:
      s.events.count_drop("batches", 1);
      return EDO_ERR_NO_MEMORY;
  }
  return EDO_ERR_NO_MEMORY;
}

int api_set_extra_bytes(int64_t table, const char* kind, uint64_t bytes) {
  Process* p = process();
  const TableInfo* t = p ? p->registry.get(table) : nullptr;
  if (!t) return EDO_ERR_BAD_HANDLE;
  if (!kind || !*kind) return EDO_ERR_INVALID_ARGUMENT;
  session().quiet.store(false);
  return p->registry.set_extra_bytes(t->id, kind, bytes);
}

int api_step() {
  ensure_initialized();
  Process& p = *process();
  if (!p.active) return EDO_OK;
  ensure_background_thread();
  Session& s = session();
  s.sink.connect_early();
  const uint64_t n = s.steps.fetch_add(1) + 1;
  if (p.cfg.window_steps > 0 && n % p.cfg.window_steps == 0) {
    if (p.async.load() && s.bg_running.load()) {
      s.queue.push_window_marker();
    } else {
      std::lock_guard<std::mutex> lk(s.counts.mutex());
      s.counts.close_windows_locked();
    }
  }
  return EDO_OK;
}

void ingest_indices(int64_t table, const void* indices, uint64_t count, int type) {
  Process* p = process();
  const TableInfo* t = p ? p->registry.get(table) : nullptr;
  if (!t) return;
  Session& s = session();
  std::lock_guard<std::mutex> lk(s.counts.mutex());
  s.counts.add_locked(*t, indices, count, type, &p->registry);
}

}  // namespace edo::capture

namespace edo::capture {

void ingest_counted(int64_t table, const stats::CountedSegment& segment) {
  Process* p = process();
  const TableInfo* t = p ? p->registry.get(table) : nullptr;
  if (!t) return;
  Session& s = session();
  std::lock_guard<std::mutex> lk(s.counts.mutex());
  s.counts.add_counted_locked(*t, segment, &p->registry);
}

}  // namespace edo::capture
