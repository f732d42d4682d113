// The statistics of a long stream of independent lookups (each lookup reads row r with a fixed
// probability p(r), whatever came before: `edo synth`'s Zipf workloads), generated directly
// instead of streaming every lookup through a TableIngestor (issue 31: 2,000 tables x 4M
// lookups took 15 minutes at ~70 ns a lookup). Same aggregate as the streamed path, in
// distribution:
//  * per-row counts: one multinomial draw per drift window (a binomial chain over the rows),
//    summed: exact totals, and each window's counts are what its lookups would have counted;
//  * drift windows: each window's hot set from its own counts (the ingestor's rule);
//  * ordered sample: the sampler's threshold from the total counts (the one the streamed
//    sampler ends at), and the sampled rows' references placed at uniformly random distinct
//    positions of their window in random order: given the counts, that is exactly how IID
//    lookups are ordered;
//  * stack-distance histogram: cold references = rows read (exact); the hits' distances have
//    the shape measured by an exact Mattson stack on a drawn sequence of drawn_lookups lookups
//    (after a warm-up quarter), scaled to the hits the counts give (integers, total = lookups).
// Standard library only (this library is linked into libedo_trace.so).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "edo/stats/table_stats.h"

namespace edo::stats {

struct IidStream {
  uint64_t lookups = 0;         // in-range lookups of the whole stream
  uint64_t window_lookups = 0;  // lookups per drift window (the last one may be shorter)
  uint64_t drawn_lookups = 0;   // length of the drawn sequence for the stack-distance shape
};

// The drawn sequence's length for a table of `rows` rows: 32 lookups a row (the stack is full
// after the warm-up quarter on all but the coldest rows), at least 2^16 and at most 2^20.
uint64_t iid_drawn_lookups(uint64_t rows);

// Whether iid_aggregate() applies and is the cheaper way: exact counts and exact stack distances
// (small tables), a stream much longer than the table (at least 64 lookups a row, 4x the drawn
// sequence) and not so many windows that drawing each window's counts costs more than the lookups.
bool iid_aggregate_applies(uint64_t rows, const IidStream& stream, const StatsConfig& config);

// The aggregate of `stream` over a table of `rows` rows whose lookups read rows[k] with
// probability probs[k] (probs sum to 1; listing the likeliest first makes the draws cheaper).
// on_window(before, window), if given, sees each window's counts (an aggregate of counts only)
// before they are added to `before`, the counts so far (a FirstSeenTracker's add()).
// Deterministic for a given seed.
TableAggregate iid_aggregate(uint64_t rows, const StatsConfig& config, const std::vector<uint64_t>& row_ids,
                             const std::vector<double>& probs, const IidStream& stream, uint64_t seed,
                             const std::function<void(const TableAggregate& before, const TableAggregate& window)>& on_window = {});

// One Binomial(n, p) draw from the splitmix64 stream at `state` (advanced): the steps of the
// multinomial draws above, public for their test.
uint64_t binomial_draw(uint64_t n, double p, uint64_t& state);

// Walker's alias table: draws index k with probability probs[k] from one 64-bit random number
// (one table read), instead of a rejection loop of logarithms and exponentials.
class AliasTable {
 public:
  explicit AliasTable(const std::vector<double>& probs);
  // `random`: 64 uniformly random bits.
  uint32_t draw(uint64_t random) const {
    const uint64_t k = ((random >> 32) * n_) >> 32;  // the top 32 bits pick the slot
    return static_cast<uint32_t>(random) < keep_[k] ? static_cast<uint32_t>(k) : alias_[k];
  }
  size_t size() const { return n_; }

 private:
  uint64_t n_ = 0;
  std::vector<uint32_t> keep_;   // keep slot k iff the low 32 bits are below this
  std::vector<uint32_t> alias_;  // else this index
};

}  // namespace edo::stats
