// take_snapshot(): what one flush of a session sends, taken under the session's locks.
#include "flush.h"

#include "registry.h"
#include "session.h"

namespace edo::capture {

FlushSnapshot take_snapshot(Session& s, Registry& registry, bool window_per_flush) {
  FlushSnapshot out;
  registry.take_unsent(s.sent, out.tables, out.extras, out.ties);
  {
    std::lock_guard<std::mutex> lk(s.counts.mutex());
    out.lookups = s.counts.take_deltas_locked(window_per_flush, out.deltas);
  }
  const uint64_t steps = s.steps.load();
  if (steps != s.steps_sent) {
    out.steps = steps;
    s.steps_sent = steps;
  }
  s.events.take(out.memory_events, out.notes, out.dropped);
  out.kernels = s.kernels.take_if_dirty();
  out.ranges = s.ranges.take_if_dirty();
  return out;
}

}  // namespace edo::capture
