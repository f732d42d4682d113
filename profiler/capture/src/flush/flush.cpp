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
    out.lookups = s.counts.take_deltas_locked(window_per_flush, s.sent.tables, out.deltas);
    const TableCounts::BudgetNews news = s.counts.take_budget_news_locked();
    if (news.refused_tables) s.events.count_drop("memory_bound_tables", news.refused_tables);
    if (news.refused_lookups) s.events.count_drop("memory_bound_lookups", news.refused_lookups);
    if (news.downsized_tables) {
      s.downsized_tables += news.downsized_tables;
      s.events.add_note({"memory_bound", std::to_string(s.downsized_tables) +
                                             " table(s) got smaller statistics (sketch sizes, LRU sample rate, drift windows, "
                                             "ordered sample) to fit "
                                             "EDO_MAX_MEMORY_MB; statistics reserved: " +
                                             std::to_string(s.counts.reserved_bytes_locked() >> 20) + " MiB"});
    }
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
