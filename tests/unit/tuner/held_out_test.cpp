// Held-out validation (issue 19 point 1): when rows were first read (model::FirstSeenCurve),
// the split of a recording into a fitted first half and a held-out second half, and a pruned
// table's error on the held-out lookups. Recordings whose right answer is known by hand: a
// job whose rows 1000..1999 are first read in its second half, and a stationary one.
#include "edo/model/strategy_params_json.h"
#include "edo/model/first_seen.h"

#include <gtest/gtest.h>

#include <cmath>

#include "edo/tuner/tuner.h"
#include "recordings.h"

namespace edo::tuner {
namespace {

TEST(HeldOut, TheSplitCountsTheLookupsOfRowsFirstReadAfterIt) {
  // 10000 lookups: the rows first read before 5000 got 6000 of them, the rows first read
  // after 5000 the other 4000 (all after it); the cut nearest half is at 5000.
  const model::FirstSeenCurve curve{{0, 100, 5500}, {2000, 10, 500}, {5000, 40, 3000}, {8000, 20, 1000}};
  const model::HeldOut h = model::held_out_split(curve, 10000);
  ASSERT_TRUE(h.valid);
  EXPECT_EQ(h.fit_lookups, 5000u);
  EXPECT_EQ(h.held_out_lookups, 5000u);
  EXPECT_EQ(h.lost, 4000u);
  EXPECT_EQ(h.rows_first_read_after, 60u);
  EXPECT_DOUBLE_EQ(h.lost_fraction(), 0.8);
  EXPECT_FALSE(model::held_out_split({{0, 100, 10000}}, 10000).valid) << "one segment: nothing to hold out";
  EXPECT_FALSE(model::held_out_split({}, 10000).valid);
}

// Rows 0..999 four times each, then rows 0..1999 twice each: 8000 lookups in two halves.
std::vector<std::vector<int64_t>> drifting_stream() {
  std::vector<int64_t> first, second;
  for (int k = 0; k < 4; ++k)
    for (int64_t r = 0; r < 1000; ++r) first.push_back(r);
  for (int k = 0; k < 2; ++k)
    for (int64_t r = 0; r < 2000; ++r) second.push_back(r);
  return {first, second};
}

// The collector's way (each flush's delta, in order) and synth's (the indices) agree.
TEST(HeldOut, TheTrackerFromDeltasAndFromIndicesAgree) {
  stats::StatsConfig cfg;
  stats::TableIngestor ing(100000, cfg);
  model::FirstSeenTracker from_deltas, from_indices;
  stats::TableAggregate total;
  bool first = true;
  for (const auto& segment : drifting_stream()) {
    from_indices.begin_segment();
    from_indices.add_indices(segment.data(), segment.size(), 100000);
    ing.add(segment.data(), segment.size());
    stats::TableAggregate delta = ing.take_delta();
    from_deltas.add(first ? stats::TableAggregate() : total, delta);
    if (first) total = std::move(delta);
    else ASSERT_TRUE(total.merge(delta));
    first = false;
  }
  const auto a = from_deltas.finish(total), b = from_indices.finish(total);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(a[k].position, b[k].position);
    EXPECT_EQ(a[k].new_rows, b[k].new_rows);
    EXPECT_EQ(a[k].lookups, b[k].lookups);
  }
  EXPECT_EQ(a[1].position, 4000u);
  EXPECT_EQ(a[1].new_rows, 1000u);
  EXPECT_EQ(a[1].lookups, 2000u);  // rows 1000..1999, twice each, all in the second half
}

model::Table recorded_table(const std::string& name, const std::vector<std::vector<int64_t>>& segments) {
  return testing::segmented_table(name, 100000, segments);
}

TEST(HeldOut, APrunedTablesErrorIsWhatItsHeldOutLookupsLose) {
  auto stream = drifting_stream();
  const auto drifting = recorded_table("drifting", stream);
  const auto stationary = recorded_table("stationary", {stream[0], stream[0]});
  auto p = testing::synthetic_profile({drifting, stationary}, 8);
  TuneOptions o;
  o.backend = "cpu";
  o.strategies = "pruned";
  o.reps = 1;
  o.max_error = INFINITY;
  o.budget_bytes = uint64_t{1} << 30;
  const model::TuneResult r = tune(p, {}, o);
  const model::TuneCandidate* pd = nullptr;
  const model::TuneCandidate* ps = nullptr;
  for (const auto& c : r.candidates)
    if (c.strategy == "pruned") (c.table == "drifting" ? pd : ps) = &c;
  ASSERT_TRUE(pd && ps);
  // Half the second half's lookups read rows 1000..1999, which the first half never read.
  EXPECT_DOUBLE_EQ(pd->error, std::sqrt(0.5)) << pd->note;
  EXPECT_NE(pd->note.find("held-out"), std::string::npos) << pd->note;
  ASSERT_TRUE(pd->params.held_out_lost_fraction) << model::params_to_text(pd->params);
  EXPECT_DOUBLE_EQ(*pd->params.held_out_lost_fraction, 0.5);
  EXPECT_EQ(ps->error, 0.0) << "every row the second half reads was read in the first";
  // Under a budget only pruning meets, the stationary table is pruned and the drifting one is
  // not (its held-out error is over the default limit): no plan keeps both within 0.02.
  model::TuneResult tight = r;
  const uint64_t table = 100000 * 16 * 4;
  replan(tight, table + table / 2, kDefaultMaxError);  // one table as recorded, the other pruned
  ASSERT_TRUE(tight.feasible);
  for (const auto& ch : tight.choices) {
    const auto& c = tight.candidates[static_cast<size_t>(ch.candidate)];
    EXPECT_EQ(c.strategy, ch.table == "stationary" ? "pruned" : "fp32") << ch.table;
  }
}

}  // namespace
}  // namespace edo::tuner
