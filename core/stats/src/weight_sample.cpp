#include "edo/stats/weight_sample.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "internal.h"

namespace edo::stats {
namespace {

struct WeightSampleRng {  // splitmix64 (named apart: unity builds batch this file with iid_workload.cpp)
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), n >= 1, without modulo bias (Lemire's multiply-shift with rejection).
  uint64_t below(uint64_t n) {
    while (true) {
      const __uint128_t m = static_cast<__uint128_t>(next()) * n;
      const uint64_t low = static_cast<uint64_t>(m);
      if (low >= n || low >= (-n) % n) return static_cast<uint64_t>(m >> 64);
    }
  }
};

}  // namespace

SnapshotRows choose_snapshot_rows(const TableAggregate& counts, uint64_t rows, uint64_t limit, uint64_t seed) {
  if (rows <= limit) return choose_snapshot_rows(std::vector<std::pair<uint64_t, uint64_t>>{}, rows, limit, seed);
  return choose_snapshot_rows(counts.top_rows(static_cast<size_t>(limit / 2)), rows, limit, seed);
}

SnapshotRows choose_snapshot_rows(const std::vector<std::pair<uint64_t, uint64_t>>& ranked, uint64_t rows, uint64_t limit,
                                  uint64_t seed) {
  SnapshotRows out;
  if (rows == 0 || limit == 0) return out;
  if (rows <= limit) {
    out.hot.resize(rows);
    for (uint64_t r = 0; r < rows; ++r) out.hot[r] = r;
    return out;
  }
  std::unordered_set<uint64_t> taken;
  for (const auto& [row, count] : ranked) {
    if (out.hot.size() >= limit / 2) break;
    if (count > 0 && row < rows && taken.insert(row).second) out.hot.push_back(row);
  }
  out.population = rows - out.hot.size();
  const uint64_t want = std::min<uint64_t>(limit - out.hot.size(), out.population);
  // Floyd's algorithm: `want` distinct positions of [0, population) in O(want).
  WeightSampleRng rng{seed ^ 0x5eed5a3b1e5ULL};
  std::unordered_set<uint64_t> chosen;
  chosen.reserve(static_cast<size_t>(want) * 2);
  for (uint64_t j = out.population - want; j < out.population; ++j) {
    const uint64_t t = rng.below(j + 1);
    if (!chosen.insert(t).second) chosen.insert(j);
  }
  std::vector<uint64_t> pos(chosen.begin(), chosen.end());
  std::sort(pos.begin(), pos.end());
  // Position p (0-based among the rows that are not hot) -> row id: walk both sorted lists.
  std::vector<uint64_t> hot_sorted = out.hot;
  std::sort(hot_sorted.begin(), hot_sorted.end());
  out.sample.reserve(pos.size());
  size_t h = 0;
  for (uint64_t p : pos) {
    uint64_t r = p + h;
    while (h < hot_sorted.size() && hot_sorted[h] <= r) {
      ++h;
      ++r;
    }
    out.sample.push_back(r);
  }
  return out;
}

struct HotRowTracker::Impl {
  detail::SpaceSaving ss;
};

HotRowTracker::HotRowTracker(uint32_t k) : impl_(std::make_unique<Impl>()) { impl_->ss.reset(std::max<uint32_t>(k, 1)); }
HotRowTracker::~HotRowTracker() = default;
HotRowTracker::HotRowTracker(HotRowTracker&&) noexcept = default;
HotRowTracker& HotRowTracker::operator=(HotRowTracker&&) noexcept = default;

void HotRowTracker::add(const TableAggregate& delta) {
  delta.for_each_nonzero([&](uint64_t row, uint64_t count) { impl_->ss.add(row, count); });
}

std::vector<std::pair<uint64_t, uint64_t>> HotRowTracker::top(size_t k) const {
  auto v = impl_->ss.sorted();
  if (v.size() > k) v.resize(k);
  return v;
}

}  // namespace edo::stats
