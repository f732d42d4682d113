// GPU-side events (CUPTI callbacks and activity records) and notes, into the current session.
#include "nvtx_ranges.h"
#include "process.h"
#include "events.h"
#include "lifecycle.h"
#include "nvtx_ranges.h"
#include "tracer_log.h"

namespace edo::capture {

bool tracer_active() {
  const Process* p = process();
  return p && p->active;
}
const Config& tracer_config() { return process()->cfg; }
int64_t session_pid() { return process() ? session().id.pid : 0; }

void count_drop(drops::Name counter, uint64_t n) {
  if (!tracer_active()) return;
  session().events.count_drop(counter, n);
}

void count_family_drop(drops::Family family, std::string_view item, uint64_t n) {
  if (!tracer_active()) return;
  session().events.count_family_drop(family, item, n);
}

void record_note(const std::string& key, const std::string& value) {
  if (!tracer_active()) return;
  session().events.add_note({key, value});
}

void record_memory_event(int64_t bytes, uint64_t address, uint64_t stream, int32_t device,
                         const char* kind) {
  if (!tracer_active()) return;
  ensure_background_thread();
  Session& s = session();
  if (bytes > 0)
    if (RangeTotals* r = innermost_range()) {
      r->alloc_bytes += uint64_t(bytes);
      s.ranges.mark_dirty();
    }
  s.events.add_memory_event({now_ns() - s.id.start_mono_ns, bytes, address, stream, device, kind});
}

void record_kernel_launch(const std::string& name, const std::vector<std::string>& tables) {
  if (!tracer_active()) return;
  session().kernels.launch(name, tables);
}

void record_kernel_launch(const std::string& name, const std::string* const* tables, size_t n) {
  if (!tracer_active()) return;
  session().kernels.launch(name, tables, n);
}

void record_kernel_time(const std::string& name, uint64_t ns, const std::vector<std::string>& tables) {
  if (!tracer_active()) return;
  session().kernels.time(name, ns, tables);
}

std::shared_ptr<const wire::AddressIndex> table_address_index() {
  const Process* p = process();
  if (!p) return nullptr;
  // Asked at every launch: the thread keeps the index it was given while the registry says it
  // is still current (no lock), by registry and version (a forked child's Process is another).
  struct Cached {
    const Registry* registry = nullptr;
    uint64_t version = 0;
    std::shared_ptr<const wire::AddressIndex> index;
  };
  thread_local Cached* cached = nullptr;
  if (!cached) cached = new Cached();  // leaked per thread
  const uint64_t version = p->registry.address_index_version();
  if (cached->registry != &p->registry || cached->version != version) {
    // Read the version first: an index newer than it is only refreshed once more.
    *cached = {&p->registry, version, p->registry.address_index()};
  }
  return cached->index;
}

}  // namespace edo::capture
