// CountedShards: SHARDS on a sample made elsewhere (see internal.h and docs/stats.md).
#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "internal.h"

namespace edo::stats {

double counted_sample_rate(uint64_t rows, const StatsConfig& config) {
  const double floor_rate = rows ? 4096.0 / static_cast<double>(rows) : 1.0;
  return std::clamp(std::max(config.shards_rate, floor_rate), 1.0 / (uint64_t{1} << hash::kSampleModBits), 1.0);
}

uint64_t counted_sample_threshold(uint64_t rows, const StatsConfig& config) {
  const double r = counted_sample_rate(rows, config);
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(r * static_cast<double>(uint64_t{1} << hash::kSampleModBits))));
}

}  // namespace edo::stats

namespace edo::stats::detail {

uint64_t CountedShards::id_of(uint64_t row) {
  auto [it, fresh] = ids_.try_emplace(row, static_cast<uint32_t>(ids_.size()));
  if (fresh && it->second >= last_.size()) last_.resize(std::max<size_t>(it->second + 1, last_.size() * 2), 0);
  return it->second;
}

int CountedShards::bucket_of(double mu) { return static_cast<int>(std::lround(std::log2(mu + 1.0) * 16.0)); }

void CountedShards::add_window(const std::vector<uint64_t>& rows) {
  if (rows.size() < Footprint::kWindow) return;
  const size_t n = rows.size();
  fp_.add_window([&](uint32_t w) { return rows[n - w]; });
  windows_.push_back(rows);
}

// Each sampled reference's stack distance (scaled by 1/rate, at most its reuse time) into the
// histogram of its count class; a thinned hot row's reference only refreshes the stack.
void CountedShards::sampled_into_classes(std::vector<SampledRef>& sample, bool classed,
                                         std::vector<StackDistanceHistogram>& cls, std::vector<double>& samples) {
  const double inv = 1.0 / rate_;
  std::sort(sample.begin(), sample.end(), [](const SampledRef& a, const SampledRef& b) { return a.position < b.position; });
  for (const SampledRef& s : sample) {
    const uint64_t id = id_of(s.row);
    const uint64_t prev = last_[id];
    last_[id] = s.position + 1;
    const uint64_t d = stack_.reference(id);
    const bool thinned = s.count > kCountedHot;
    if (thinned && classed) continue;  // a hot row's reference: it only refreshes the stack
    const uint32_t k = classed && s.count ? std::min<uint32_t>(kClasses - 1, 31u - static_cast<uint32_t>(__builtin_clz(s.count))) : 0;
    const double w = thinned ? kCountedThin : 1.0;
    samples[k] += w;
    if (d == MattsonStack::kCold || prev == 0 || s.position < prev) {
      cls[k].add_cold(w);
      continue;
    }
    double est = (d == 0 ? 0.5 : static_cast<double>(d)) * inv;
    est = std::min(est, static_cast<double>(s.position - prev));
    cls[k].add(static_cast<uint64_t>(std::llround(est)), w);
  }
}

// Reuse times of hot rows seen in the windows: at window positions from W/2 on, a reuse time
// below W/2 is always visible (observed), a longer one never (censored).
std::map<int, CountedShards::HotReuse> CountedShards::hot_reuse_in_windows(const HotRow& hot_row) const {
  std::map<int, HotReuse> seen;
  constexpr uint32_t kHalf = Footprint::kWindow / 2;
  std::unordered_map<uint64_t, uint32_t> last;
  for (const auto& w : windows_) {
    last.clear();
    for (uint32_t i = 0; i < w.size(); ++i) {
      const auto it = last.find(w[i]);
      const int64_t j = it == last.end() ? -1 : int64_t(it->second);
      last[w[i]] = i;
      double mu = 0.0;
      if (i < kHalf || !hot_row(w[i], mu)) continue;
      HotReuse& s = seen[bucket_of(mu)];
      if (j >= 0 && int64_t(i) - j <= int64_t(kHalf)) {
        s.reuse[uint32_t(int64_t(i) - j - 1)] += 1.0;
        s.observed += 1.0;
      } else {
        s.censored += 1.0;
      }
    }
  }
  return seen;
}

// Hot references: grouped by mean reuse time (1/16 octave); each group's reuse times as seen
// in the windows where there are enough of them, else exponential of mean mu. Returns the
// number of hot references.
double CountedShards::add_hot_references(const std::vector<std::pair<double, double>>& hot,
                                         const std::map<int, HotReuse>& seen, std::vector<double>& bins,
                                         uint64_t& maxd) const {
  std::map<int, std::pair<double, double>> groups;  // bucket -> (references, references x mean)
  double hot_total = 0.0;
  for (const auto& [mu, n] : hot) {
    if (n <= 0.0) continue;
    auto& g = groups[bucket_of(mu)];
    g.first += n;
    g.second += n * mu;
    hot_total += n;
  }
  auto exponential = [&](double mu, double offset, double weight) {
    for (uint32_t j = 0; j < kQuantiles; ++j) {
      const double q = (j + 0.5) / kQuantiles;
      put_distance(bins, maxd, fp_.at(offset - mu * std::log(1.0 - q)), weight / kQuantiles);
    }
  };
  for (const auto& [bucket, g] : groups) {
    const double mu = g.second / g.first;
    auto it = seen.find(bucket);
    const double n_seen = it == seen.end() ? 0.0 : it->second.observed + it->second.censored;
    if (n_seen < 32.0) {
      exponential(mu, 0.0, g.first);
      continue;
    }
    for (const auto& [t, n] : it->second.reuse) put_distance(bins, maxd, fp_.at(double(t)), g.first * n / n_seen);
    if (it->second.censored > 0.0)  // beyond half a window: memoryless from there
      exponential(mu, Footprint::kWindow / 2, g.first * it->second.censored / n_seen);
  }
  return hot_total;
}

void CountedShards::add_segment(std::vector<SampledRef>& sample, const std::vector<double>* class_refs,
                                const std::vector<std::pair<double, double>>& hot, const HotRow* hot_row,
                                uint64_t refs, StackDistanceHistogram& out) {
  std::vector<StackDistanceHistogram> cls(kClasses);
  std::vector<double> samples(kClasses, 0.0);
  sampled_into_classes(sample, class_refs != nullptr, cls, samples);
  const std::map<int, HotReuse> seen = hot_row && *hot_row ? hot_reuse_in_windows(*hot_row) : std::map<int, HotReuse>{};
  windows_.clear();

  std::vector<double> bins = out.bins();
  double cold = out.cold();
  uint64_t maxd = out.max_distance();
  const double hot_total = add_hot_references(hot, seen, bins, maxd);
  // The rest: sampled references, each class scaled to its exact number of references.
  std::vector<double> total(kClasses, 0.0);
  const double want = std::max(0.0, static_cast<double>(refs) - hot_total);
  if (class_refs) {
    double sum = 0.0;
    for (size_t k = 0; k < kClasses && k < class_refs->size(); ++k) sum += total[k] = (*class_refs)[k];
    if (sum > 0.0)
      for (double& x : total) x *= want / sum;
  } else {
    total[0] = want;
  }
  add_stratified(bins, cold, maxd, cls, samples, total);
  out.set(std::move(bins), cold, maxd);
}

}  // namespace edo::stats::detail
