// When each row was first read (issue 19, held-out validation): the recording's lookups cut
// into segments (one per tracer flush, or per `edo synth` chunk), and per segment the rows
// first read in it and all the lookups those rows ever got. Whatever is fitted on the lookups
// before a cut (the rows a pruned table keeps) can then be scored on the lookups after it:
// the lookups a table pruned to the rows read before the cut loses afterwards are exactly
// the lookups of the rows first read after it.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "edo/stats/table_stats.h"

namespace edo::model {

struct FirstSeenSegment {
  uint64_t position = 0;  // lookups before the segment
  uint64_t new_rows = 0;  // rows first read in it
  uint64_t lookups = 0;   // every lookup (whole recording) of those rows
};

// Segments ascending by position; empty when unknown (sketch counts, older recordings).
using FirstSeenCurve = std::vector<FirstSeenSegment>;

// The held-out split of a curve: the lookups before the segment boundary nearest to `fraction`
// of all lookups (`fit_lookups`), the lookups after it, and of those the ones on rows not read
// before it (`lost`). `valid` false when the curve has no boundary strictly inside.
struct HeldOut {
  bool valid = false;
  uint64_t fit_lookups = 0;
  uint64_t held_out_lookups = 0;
  uint64_t lost = 0;
  uint64_t rows_first_read_after = 0;
  double lost_fraction() const { return held_out_lookups ? static_cast<double>(lost) / static_cast<double>(held_out_lookups) : 0.0; }
};
HeldOut held_out_split(const FirstSeenCurve& curve, uint64_t total_lookups, double fraction = 0.5);

// Builds a curve from exact-count deltas in the order they were counted (the collector: each
// frame's aggregate; synth: each chunk). Sketch-mode deltas make the curve unknown.
class FirstSeenTracker {
 public:
  // `delta` is about to be added to `before` (the table's aggregate so far).
  void add(const stats::TableAggregate& before, const stats::TableAggregate& delta);
  // From the index stream itself (`edo synth`): a new segment starts, then its indices (those
  // outside [0, rows) are not lookups). Kept densely: 4 bytes per row of the table.
  void begin_segment();
  void add_indices(const int64_t* idx, size_t n, uint64_t rows);
  // The curve over `total` (the table's final aggregate), at most `max_segments` (adjacent
  // segments merged).
  FirstSeenCurve finish(const stats::TableAggregate& total, size_t max_segments = 256) const;

 private:
  std::unordered_map<uint64_t, uint32_t> first_;  // row -> segment
  std::vector<uint32_t> dense_;                   // add_indices(): row -> segment + 1 (0: unseen)
  std::vector<uint64_t> positions_;               // segment -> lookups before it
  uint64_t lookups_ = 0;
  bool unknown_ = false;
};

}  // namespace edo::model
