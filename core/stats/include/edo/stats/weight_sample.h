// Which rows of a table a weight snapshot keeps (`edo record --weights`): the hottest rows by
// recorded count plus a uniform sample of the rest, at most `limit` rows in all. The tracer
// picks them inside the job; tests pick the same rows from a full table to check the tuner's
// estimate against the full-table error. Standard library only (linked into libedo_trace.so).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "edo/stats/table_stats.h"

namespace edo::stats {

struct SnapshotRows {
  std::vector<uint64_t> hot;     // the hottest rows (count > 0), most-read first
  std::vector<uint64_t> sample;  // a uniform sample without replacement of the other rows, ascending
  uint64_t population = 0;       // how many rows the sample was drawn from (rows - hot.size())
};

// Default bound on a snapshot's rows per table (EDO_WEIGHT_ROWS).
inline constexpr uint64_t kDefaultSnapshotRows = 65536;

// A table of at most `limit` rows is kept whole (every row in `hot`, ascending; population 0).
// Otherwise up to limit / 2 rows with the highest counts (rows never read are not "hot") and
// a uniform sample of limit - hot.size() of the remaining rows. Deterministic for a seed.
// `counts` may be empty (no lookups yet) or of another size than `rows` (a sketch, a table
// re-registered): only rows < `rows` are used.
SnapshotRows choose_snapshot_rows(const TableAggregate& counts, uint64_t rows, uint64_t limit, uint64_t seed);
// The same from (row, count) pairs ranked by count, most-read first (the tracer's running top
// rows): the first limit / 2 with count > 0 are hot.
SnapshotRows choose_snapshot_rows(const std::vector<std::pair<uint64_t, uint64_t>>& ranked, uint64_t rows, uint64_t limit,
                                  uint64_t seed);

// The most-read rows of a table over every delta it was given (weighted space-saving, k
// entries: any row read more than total/k times is in it, counts overestimated by at most
// total/k). The tracer keeps one per table while weight snapshots are on, because its
// ingestors hand counts out as deltas and keep none.
class HotRowTracker {
 public:
  explicit HotRowTracker(uint32_t k);
  ~HotRowTracker();
  HotRowTracker(HotRowTracker&&) noexcept;
  HotRowTracker& operator=(HotRowTracker&&) noexcept;
  void add(const TableAggregate& delta);  // every row the delta counted (sketch deltas: their top-K)
  std::vector<std::pair<uint64_t, uint64_t>> top(size_t k) const;  // most-read first

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace edo::stats
