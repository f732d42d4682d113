#include "edo/gui/recording/memory_timeline.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "edo/gui/tables/table_fields.h"

namespace edo::gui {

double StackedTimeline::total_at(size_t sample) const {
  double total = 0.0;
  for (const auto& s : bytes) total += s[sample];
  return total;
}

namespace {

StackedTimeline build_one(int64_t session_id, std::vector<const model::MemoryEvent*>& events, double session_s,
                          size_t max_series, size_t buckets) {
  std::stable_sort(events.begin(), events.end(),
                   [](const model::MemoryEvent* a, const model::MemoryEvent* b) { return a->time_ns < b->time_ns; });
  StackedTimeline tl;
  tl.session_id = session_id;
  tl.events = events.size();

  // Series: tables ranked by their own peak of live bytes.
  std::unordered_map<std::string, int64_t> live, own_peak;
  for (const auto* e : events) {
    if (e->table.empty()) continue;
    int64_t& l = live[e->table];
    l += e->bytes;
    int64_t& p = own_peak[e->table];
    p = std::max(p, l);
  }
  std::vector<std::pair<std::string, int64_t>> ranked(own_peak.begin(), own_peak.end());
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  const size_t named = std::min(ranked.size(), max_series > 0 ? max_series - 1 : 0);
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < named; ++i) {
    tl.series.push_back(ranked[i].first);
    index[ranked[i].first] = i;
  }
  const size_t other = tl.series.size();
  bool any_other = ranked.size() > named;
  for (const auto* e : events) any_other |= e->table.empty();
  if (any_other) tl.series.emplace_back(kOtherSeries);
  tl.bytes.assign(tl.series.size(), {});

  const double last_s = events.empty() ? 0.0 : static_cast<double>(events.back()->time_ns) / 1e9;
  tl.duration_s = std::max(session_s, last_s);
  const double width = tl.duration_s > 0 ? tl.duration_s / static_cast<double>(std::max<size_t>(buckets, 1)) : 1.0;

  std::vector<int64_t> state(tl.series.size(), 0);
  int64_t total = 0;
  auto push = [&](double t, const std::vector<int64_t>& s) {
    tl.time_s.push_back(t);
    for (size_t i = 0; i < s.size(); ++i) tl.bytes[i].push_back(static_cast<double>(std::max<int64_t>(0, s[i])));
  };
  push(0.0, state);

  // Per bucket: the moment of the highest total and the state at the end of the bucket.
  bool open = false;
  int64_t bucket = -1;
  double best_t = 0.0, end_t = 0.0;
  int64_t best_total = 0;
  std::vector<int64_t> best_state;
  auto close_bucket = [&] {
    if (!open) return;
    if (best_t < end_t) {
      push(best_t, best_state);
      push(end_t, state);
    } else {
      push(best_t, best_state);
      if (best_state != state) push(end_t, state);
    }
    open = false;
  };
  tl.peak_bytes = 0;
  for (const auto* e : events) {
    const double t = static_cast<double>(e->time_ns) / 1e9;
    const auto b = static_cast<int64_t>(std::floor(t / width));
    if (!open || b != bucket) {
      close_bucket();
      open = true;
      bucket = b;
      best_total = INT64_MIN;
    }
    auto it = e->table.empty() ? index.end() : index.find(e->table);
    const size_t s = it == index.end() ? other : it->second;
    state[s] += e->bytes;
    total += e->bytes;
    end_t = t;
    if (total > best_total) {
      best_total = total;
      best_t = t;
      best_state = state;
    }
    if (total > tl.peak_bytes) {
      tl.peak_bytes = total;
      tl.peak_time_s = t;
    }
  }
  close_bucket();
  if (tl.time_s.back() < tl.duration_s) push(tl.duration_s, state);
  return tl;
}

}  // namespace

std::vector<StackedTimeline> build_timelines(const model::Profile& profile, size_t max_series, size_t buckets) {
  std::map<int64_t, std::vector<const model::MemoryEvent*>> by_session;
  for (const auto& e : profile.memory_events) by_session[e.session_id].push_back(&e);
  std::vector<StackedTimeline> out;
  for (auto& [sid, events] : by_session) {
    double session_s = 0.0;
    for (const auto& s : profile.sessions)
      if (s.id == sid) session_s = static_cast<double>(s.duration_ns) / 1e9;
    out.push_back(build_one(sid, events, session_s, max_series, buckets));
  }
  return out;
}

std::vector<TableBytes> table_bytes_stack(const std::vector<model::TableView>& tables, size_t max_series) {
  std::vector<TableBytes> all;
  for (const auto& t : tables)
    if (total_bytes(t) > 0) all.push_back({t.name, total_bytes(t)});
  std::stable_sort(all.begin(), all.end(), [](const TableBytes& a, const TableBytes& b) { return a.bytes > b.bytes; });
  if (max_series == 0 || all.size() <= max_series) return all;
  std::vector<TableBytes> out(all.begin(), all.begin() + static_cast<ptrdiff_t>(max_series - 1));
  TableBytes rest{kOtherSeries, 0};
  for (size_t i = max_series - 1; i < all.size(); ++i) rest.bytes += all[i].bytes;
  out.push_back(rest);
  return out;
}

}  // namespace edo::gui
