// Whole-profile helpers: totals and peak memory.
#include "edo/model/profile.h"

#include "edo/model/processes.h"

#include <algorithm>
#include <limits>
#include <map>

#include "edo/dtype.h"

namespace edo::model {

uint64_t Profile::dropped_events() const {
  uint64_t total = 0;
  for (const auto& s : sessions) total = saturating_add(total, s.dropped_events);
  return total;
}

std::map<std::string, uint64_t> Profile::drops() const {
  std::map<std::string, uint64_t> total;
  for (const auto& s : sessions)
    for (const auto& [name, n] : s.drops) total[name] += n;
  return total;
}

bool is_gradient_kind(const std::string& kind) { return kind == "grad" || kind.rfind("grad.", 0) == 0; }

TableMemory Profile::table_memory() const {
  // A tied table shares its weights with the table it is tied to, and a table a forked worker
  // inherited is its parent's memory: count the storage once.
  TableMemory m;
  const std::vector<size_t> same = same_table_as(*this);
  for (size_t i = 0; i < tables.size(); ++i) {
    if (same[i] != i) continue;
    const Table& t = tables[i];
    bool tied_to_earlier = std::any_of(ties.begin(), ties.end(), [&](const Tie& tie) {
      return tie.session_id == t.session_id && tie.tied_with == t.name;
    });
    if (!tied_to_earlier) m.weight_bytes = saturating_add(m.weight_bytes, t.weight_bytes);
    m.optimizer_bytes = saturating_add(m.optimizer_bytes, t.optimizer_bytes);
    m.grad_bytes = saturating_add(m.grad_bytes, t.grad_bytes);
  }
  return m;
}

namespace {
// Sum of "session.<id>.<key>" metadata values; a value that is not a number counts 0.
uint64_t sum_session_notes(const std::map<std::string, std::string>& metadata, const std::string& key) {
  uint64_t total = 0;
  const std::string prefix = "session.", suffix = "." + key;
  for (const auto& [k, v] : metadata) {
    if (k.size() <= prefix.size() + suffix.size() || k.compare(0, prefix.size(), prefix) != 0 ||
        k.compare(k.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string id = k.substr(prefix.size(), k.size() - prefix.size() - suffix.size());
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) continue;
    if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos) continue;
    total += std::stoull(v);
  }
  return total;
}
}  // namespace

uint64_t Profile::edo_device_bytes() const { return sum_session_notes(metadata, "edo.device_bytes"); }
uint64_t Profile::edo_pinned_bytes() const { return sum_session_notes(metadata, "edo.pinned_bytes"); }

int64_t Profile::peak_bytes() const {
  if (memory_events.empty())
    return static_cast<int64_t>(std::min<uint64_t>(table_bytes(), std::numeric_limits<int64_t>::max()));
  // Events are stored per session in time order; the peak of each session's running sum.
  std::map<int64_t, std::vector<const MemoryEvent*>> by_session;
  for (const auto& e : memory_events) by_session[e.session_id].push_back(&e);
  int64_t peak = 0;
  for (auto& [session, events] : by_session) {
    std::stable_sort(events.begin(), events.end(),
                     [](const MemoryEvent* a, const MemoryEvent* b) { return a->time_ns < b->time_ns; });
    int64_t live = 0;
    for (const MemoryEvent* e : events) {
      // Saturating: a damaged file's sizes must not overflow into a negative peak.
      if (__builtin_add_overflow(live, e->bytes, &live))
        live = e->bytes > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
      peak = std::max(peak, live);
    }
  }
  return peak;
}

uint32_t dtype_size(const std::string& dtype) {
  const auto t = parse_dtype(dtype);
  return t ? dtype_bytes(*t) : 0;
}

}  // namespace edo::model
