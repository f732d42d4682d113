#include "small_tables.h"

#include <algorithm>

namespace edo::tuner {

SmallTables small_tables(const Workload& w, uint64_t budget_bytes, uint32_t devices) {
  SmallTables out;
  out.small.assign(w.groups.size(), 0);
  std::vector<size_t> tuned;
  for (size_t gi = 0; gi < w.groups.size(); ++gi)
    if (w.groups[gi].tuned) tuned.push_back(gi);
  if (budget_bytes == 0 || tuned.size() <= kMinTablesForSmall) return out;
  const double budget = static_cast<double>(budget_bytes) * std::max<uint32_t>(1, devices);
  double recorded = 0;
  for (const auto& g : w.groups) recorded += static_cast<double>(g.recorded_device_bytes());
  if (recorded <= budget) return out;  // fits as recorded: the plan is about speed, where bytes say nothing
  const double allowance = budget * kSmallTablesFraction;
  // Smallest first; of equal sizes the later in workload order first (stable on the reverse).
  std::reverse(tuned.begin(), tuned.end());
  std::stable_sort(tuned.begin(), tuned.end(), [&](size_t a, size_t b) {
    return w.groups[a].recorded_device_bytes() < w.groups[b].recorded_device_bytes();
  });
  double sum = 0;
  for (size_t gi : tuned) {
    const uint64_t bytes = w.groups[gi].recorded_device_bytes();
    if (sum + static_cast<double>(bytes) > allowance) break;
    sum += static_cast<double>(bytes);
    out.small[gi] = 1;
    ++out.count;
    out.bytes += bytes;
    out.largest = std::max(out.largest, bytes);
  }
  return out;
}

}  // namespace edo::tuner
