// Which rows of a table a weight snapshot keeps (`edo record --weights`): the hottest rows by
// recorded count plus a uniform sample of the rest, at most `limit` rows in all. The tracer
// picks them inside the job; tests pick the same rows from a full table to check the tuner's
// estimate against the full-table error. Standard library only (linked into libedo_trace.so).
#pragma once

#include <cstdint>
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

}  // namespace edo::stats
