// Ranks side by side. See rank_view.h.
#include "edo/model/rank_view.h"

#include <algorithm>
#include <limits>
#include <set>

namespace edo::model {
namespace {

// The peak of one session's running sum of allocations (Profile::peak_bytes()'s definition).
int64_t session_peak(const std::vector<const MemoryEvent*>& events) {
  std::vector<const MemoryEvent*> sorted = events;
  std::stable_sort(sorted.begin(), sorted.end(), [](const MemoryEvent* a, const MemoryEvent* b) { return a->time_ns < b->time_ns; });
  int64_t live = 0, peak = 0;
  for (const MemoryEvent* e : sorted) {
    if (__builtin_add_overflow(live, e->bytes, &live))
      live = e->bytes > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace

std::vector<RankView> rank_views(const Profile& p, const JobView& job, const std::vector<std::string>& view_of_table,
                                 const std::map<int64_t, uint64_t>* stored_lookups) {
  std::vector<RankView> out;
  std::map<int64_t, std::vector<const MemoryEvent*>> events;
  for (const auto& e : p.memory_events) events[e.session_id].push_back(&e);
  const std::vector<size_t> same = same_table_as(p);
  for (size_t main : job.ranks) {
    const Session& s = p.sessions[main];
    RankView r;
    r.rank = *s.rank;
    r.world_size = s.identity.world_size;
    r.local_rank = s.local_rank;
    r.group_rank = s.identity.group_rank;
    r.node = s.host;
    r.pid = s.pid;
    r.steps = s.steps;
    r.duration_ns = s.duration_ns;
    r.start_unix_ns = s.start_unix_ns;
    // The rank's processes: its own and those of the same rank on its host (forked workers
    // inherit RANK). The root is the launcher, never a rank's.
    std::set<int64_t> mine;
    for (size_t i = 0; i < p.sessions.size(); ++i) {
      const Session& o = p.sessions[i];
      if (o.rank == s.rank && o.host == s.host && (job.roles[i] != Role::kRoot || i == main)) mine.insert(o.id);
    }
    r.processes = mine.size();
    uint64_t table_bytes = 0;
    for (size_t i = 0; i < p.tables.size(); ++i) {
      const Table& t = p.tables[i];
      if (!mine.count(t.session_id)) continue;
      uint64_t n = t.aggregate.lookups();
      if (stored_lookups) {
        auto it = stored_lookups->find(t.id);
        n = it == stored_lookups->end() ? 0 : it->second;
      }
      const std::string& name = i < view_of_table.size() ? view_of_table[i] : t.name;
      r.lookups_by_table[name] += n;
      r.lookups += n;
      if (same[i] == i) table_bytes = saturating_add(table_bytes, t.total_bytes());
    }
    for (int64_t id : mine) {
      auto it = events.find(id);
      if (it == events.end()) continue;
      r.peak_from_timeline = true;
      r.peak_bytes = std::max(r.peak_bytes, session_peak(it->second));
    }
    if (!r.peak_from_timeline)
      r.peak_bytes = static_cast<int64_t>(std::min<uint64_t>(table_bytes, std::numeric_limits<int64_t>::max()));
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<TableImbalance> rank_imbalance(const std::vector<RankView>& ranks) {
  std::vector<TableImbalance> out;
  if (ranks.size() < 2) return out;
  std::set<std::string> tables;
  for (const auto& r : ranks)
    for (const auto& [t, n] : r.lookups_by_table) tables.insert(t);
  for (const auto& t : tables) {
    TableImbalance im;
    im.table = t;
    uint64_t total = 0;
    bool first = true;
    for (const auto& r : ranks) {  // ties go to the lowest rank
      auto it = r.lookups_by_table.find(t);
      const uint64_t n = it == r.lookups_by_table.end() ? 0 : it->second;
      if (it != r.lookups_by_table.end()) ++im.ranks;
      total += n;
      if (first || n > im.busiest) {
        im.busiest = n;
        im.busiest_rank = r.rank;
        first = false;
      }
    }
    im.mean = static_cast<double>(total) / static_cast<double>(ranks.size());
    im.ratio = im.mean > 0 ? static_cast<double>(im.busiest) / im.mean : 0.0;
    out.push_back(std::move(im));
  }
  std::stable_sort(out.begin(), out.end(), [](const TableImbalance& a, const TableImbalance& b) { return a.ratio > b.ratio; });
  return out;
}

}  // namespace edo::model
