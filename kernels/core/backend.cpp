// Workload helpers and the timing loop shared by every backend.
#include "edo/kernels/backend.h"

#include <algorithm>
#include <stdexcept>

namespace edo::kernels {

Workload Workload::fixed_bags(std::vector<std::vector<std::int64_t>> batches, std::uint32_t pooling) {
  if (pooling == 0) throw std::invalid_argument("bags need at least one index (pooling 0)");
  Workload w;
  for (auto& b : batches) {
    b.resize(b.size() / pooling * pooling);
    const auto n_bags = static_cast<std::int64_t>(b.size() / pooling);
    std::vector<std::int64_t> off(static_cast<std::size_t>(n_bags) + 1);
    for (std::int64_t i = 0; i <= n_bags; ++i) off[static_cast<std::size_t>(i)] = i * pooling;
    w.offsets.push_back(std::move(off));
  }
  w.batches = std::move(batches);
  w.check();
  return w;
}

std::uint64_t Workload::indices() const {
  std::uint64_t n = 0;
  for (const auto& b : batches) n += b.size();
  return n;
}

std::uint64_t Workload::bags() const {
  std::uint64_t n = 0;
  for (const auto& o : offsets) n += o.empty() ? 0 : o.size() - 1;
  return n;
}

std::uint64_t Workload::max_batch() const {
  std::uint64_t n = 0;
  for (const auto& b : batches) n = std::max<std::uint64_t>(n, b.size());
  return n;
}

void Workload::check() const {
  if (batches.empty()) throw std::invalid_argument("a workload needs at least one batch");
  if (offsets.size() != batches.size()) throw std::invalid_argument("a workload needs one offsets vector per batch");
  for (std::size_t i = 0; i < batches.size(); ++i) {
    if (batches[i].empty()) throw std::invalid_argument("batch " + std::to_string(i) + " of the workload is empty");
    if (offsets[i].empty()) throw std::invalid_argument("batch " + std::to_string(i) + " has no bag offsets");
    check_offsets(offsets[i].data(), static_cast<std::int64_t>(offsets[i].size()) - 1, static_cast<std::int64_t>(batches[i].size()));
  }
}

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

LookupTimes time_lookups(LoadedTable& table, int reps, int warmup) {
  if (reps < 1 || warmup < 0) throw std::invalid_argument("time_lookups: reps must be >= 1 and warmup >= 0");
  LookupTimes t;
  for (int bag = 0; bag < 2; ++bag) {
    for (int i = 0; i < warmup; ++i) table.pass(bag);
    table.reset_stats();
    std::vector<double> s;
    for (int i = 0; i < reps; ++i) s.push_back(table.pass(bag));
    const double sec = median(s);
    const double rows = static_cast<double>(table.indices());
    (bag ? t.bag_s_per_pass : t.gather_s_per_pass) = sec;
    (bag ? t.bag_rows_per_s : t.gather_rows_per_s) = sec > 0 ? rows / sec : 0.0;
    if (bag) t.hit_rate = table.hit_rate();
  }
  return t;
}

}  // namespace edo::kernels
