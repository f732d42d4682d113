#include "representatives.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>

namespace edo::tuner {

std::string timing_key(const TableGroup& g) {
  std::vector<uint64_t> counts;
  counts.reserve(g.counts.unique_rows());
  g.counts.for_each_nonzero([&](uint64_t, uint64_t c) { counts.push_back(c); });
  std::sort(counts.begin(), counts.end());
  uint64_t h = 1469598103934665603ULL;
  for (uint64_t c : counts) h = (h ^ c) * 1099511628211ULL;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%llu|%u|%s|%llu|%llu|%zu|%zu|%.17g|%d|%zu|%llx", static_cast<unsigned long long>(g.rows),
                g.dim, g.optimizer.c_str(), static_cast<unsigned long long>(g.optimizer_bytes),
                static_cast<unsigned long long>(g.grad_bytes), g.members.size(), g.identical.size(), g.lookups_per_step,
                static_cast<int>(g.counts.mode()), counts.size(), static_cast<unsigned long long>(h));
  return g.dtype + "|" + buf;
}

namespace {

// floor(log4(x)), -1 below 1.
int bucket4(double x) { return x >= 1 ? static_cast<int>(std::floor(std::log2(x) / 2.0)) : -1; }

// A hit rate in quarters: [0, .25), [.25, .5), [.5, .75), [.75, 1].
int quarter(double h) { return std::clamp(static_cast<int>(std::floor(h * 4.0)), 0, 3); }

}  // namespace

std::string class_key(const TableGroup& g) {
  const bool prunable = g.counts.mode() == stats::CountMode::kExact && g.counts.unique_rows() < g.rows;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%u|r%d|l%d|%s|%d%d|m%zu|i%zu|c%d%d|h%d%d", g.dim, bucket4(static_cast<double>(g.rows)),
                bucket4(g.lookups_per_step), g.optimizer.c_str(), g.optimizer_bytes > 0, g.grad_bytes > 0, g.members.size(),
                g.identical.size(), static_cast<int>(g.counts.mode()), prunable, quarter(g.summary.lru_hit_rate_1pct),
                quarter(g.summary.lru_hit_rate_10pct));
  return g.dtype + "|" + buf;
}

TimingClasses timing_classes(const Workload& w, bool representatives) {
  TimingClasses out;
  out.source.assign(w.groups.size(), -1);
  out.twin.assign(w.groups.size(), 0);
  std::map<std::string, std::vector<size_t>> by_key;
  std::vector<std::string> exact(w.groups.size());
  for (size_t gi = 0; gi < w.groups.size(); ++gi) {
    if (!w.groups[gi].tuned) continue;
    exact[gi] = timing_key(w.groups[gi]);
    by_key[representatives ? class_key(w.groups[gi]) : exact[gi]].push_back(gi);
  }
  for (auto& [key, members] : by_key) {
    ++out.classes;
    // The median by rows: its per-lookup time is the nearest to the most members' (the
    // others' rows are within the class's factor of 4 on either side); of several with those
    // rows, the first in workload order (the largest first: of identical tables, the first).
    std::vector<uint64_t> rows;
    for (size_t gi : members) rows.push_back(w.groups[gi].rows);
    std::nth_element(rows.begin(), rows.begin() + static_cast<long>((rows.size() - 1) / 2), rows.end());
    const uint64_t median = rows[(rows.size() - 1) / 2];
    size_t rep = members.front();
    for (size_t gi : members)
      if (w.groups[gi].rows == median) {
        rep = gi;
        break;
      }
    for (size_t gi : members) {
      if (gi == rep) continue;
      out.source[gi] = static_cast<int>(rep);
      out.twin[gi] = exact[gi] == exact[rep];
    }
  }
  return out;
}

int matching_candidate(const std::vector<Candidate>& rep, const std::vector<Candidate>& own, size_t ci) {
  const Candidate& c = own[ci];
  if (c.strategy == "offload") {
    auto policy = [](const Candidate& x) {
      const auto at = x.spec.find("policy=");
      return at == std::string::npos ? std::string() : x.spec.substr(at + 7);
    };
    int best = -1;
    double best_gap = std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < rep.size(); ++k) {
      const Candidate& r = rep[k];
      if (r.strategy != c.strategy || r.optimizer != c.optimizer || policy(r) != policy(c)) continue;
      const double gap = std::fabs(r.recorded_hit_rate.value_or(0.0) - c.recorded_hit_rate.value_or(0.0));
      if (gap < best_gap) {
        best_gap = gap;
        best = static_cast<int>(k);
      }
    }
    return best;
  }
  auto same_role = [&](const Candidate& x) {
    return x.strategy == c.strategy && x.optimizer == c.optimizer && x.baseline == c.baseline;
  };
  size_t ordinal = 0;
  for (size_t k = 0; k < ci; ++k) ordinal += same_role(own[k]);
  for (size_t k = 0; k < rep.size(); ++k)
    if (same_role(rep[k]) && ordinal-- == 0) return static_cast<int>(k);
  return -1;
}

void borrow_timing(model::TuneCandidate& m, const model::TuneCandidate& src, const model::TuneCandidate& base,
                   double lookups, double src_lookups, const std::string& from, bool twin) {
  m.measured = true;
  m.measured_rows = src.measured_rows;
  m.timing_from = from;
  // What the step covers is the representative's (same optimizer and gradient: the class key).
  m.step_covers = src.step_covers;
  // (an offload cache's held-out hit rate depends on the recorded order, not only the counts:
  // a twin with another held-out rate is predicted, not copied)
  if (twin && m.heldout_hit_rate == src.heldout_hit_rate) {
    m.step_us = src.step_us;
    m.step_us_lo = src.step_us_lo;
    m.step_us_hi = src.step_us_hi;
    m.hit_rate = src.hit_rate;
    m.forward_us = src.forward_us;
    m.backward_us = src.backward_us;
    m.update_us = src.update_us;
    m.timing_kind = model::TimingKind::kTwin;
    const std::string said = "timed as " + from + " (same shape, dtype and access counts)" + (src.note.empty() ? "" : "; ");
    m.note = said + src.note;
    m.note_reasons = model::shifted(src.note_reasons, static_cast<uint32_t>(said.size()));
    return;
  }
  m.timing_kind = model::TimingKind::kPredicted;
  const double scale = src_lookups > 0 ? lookups / src_lookups : 1.0;
  // Per lookup: the representative's time, or for offload its baseline's plus its extra cost
  // (the misses') at this table's recorded miss rate.
  double per = src.step_us, lo = src.step_us_lo, hi = src.step_us_hi;
  std::string how = "its per-lookup time";
  // The held-out rates where both have one (what the caches will see), else the recorded ones.
  const bool held = m.heldout_hit_rate && src.heldout_hit_rate;
  const std::optional<double> m_hit = held ? m.heldout_hit_rate : m.recorded_hit_rate;
  const std::optional<double> src_hit = held ? src.heldout_hit_rate : src.recorded_hit_rate;
  if (m.strategy == "offload" && base.usable() && m_hit && src_hit && *src_hit < 1.0) {
    const double ratio = (1.0 - *m_hit) / (1.0 - *src_hit);
    const double extra = src.step_us - base.step_us;
    per = base.step_us + extra * ratio;
    lo = src.step_us_lo - src.step_us + per;
    hi = src.step_us_hi - src.step_us + per;
    char buf[96];
    std::snprintf(buf, sizeof buf, "its baseline's per-lookup time plus its misses' at this table's %s miss rate (x%.3g)",
                  held ? "held-out" : "recorded", ratio);
    how = buf;
  }
  m.step_us = per * scale;
  m.step_us_lo = lo * scale;
  m.step_us_hi = hi * scale;
  // The phases in the representative's proportions (NaN stays NaN: not split).
  const double part = src.step_us > 0 ? m.step_us / src.step_us : 1.0;
  m.forward_us = src.forward_us * part;
  m.backward_us = src.backward_us * part;
  m.update_us = src.update_us * part;
  // Not measured on this table: its own held-out rate where it has one (the rate the plan uses
  // for a cache), else none (its recorded_hit_rate stays).
  m.hit_rate = m.heldout_hit_rate;
  char buf[64];
  std::snprintf(buf, sizeof buf, " x %.4g lookups per step (%.4g there)", lookups, src_lookups);
  m.note = "predicted from " + from + " (the measured representative of its class): " + how + buf;
}

}  // namespace edo::tuner
