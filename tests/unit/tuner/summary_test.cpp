// The one plan summary (edo/tuner/summary.h) that `edo tune`, `edo report` and the dashboard
// show: the weights in one wording, a run stopped by the time limit says so and names
// --time-limit, and a verdict about budgets after an early stop is about what was measured.
#include "edo/tuner/summary.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace edo::tuner {
namespace {

model::TuneResult with_tables(size_t recorded, size_t synthetic) {
  model::TuneResult r;
  r.backend = "cpu";
  r.device = "test CPU";
  r.weights = recorded && !synthetic ? "recorded" : "synthetic";
  for (size_t i = 0; i < recorded + synthetic; ++i) {
    model::TuneTable t;
    t.name = "t" + std::to_string(i);
    t.weights = i < recorded ? "recorded" : "synthetic";
    r.tables.push_back(t);
  }
  // A tied member and an untuned table do not count.
  model::TuneTable tied;
  tied.name = "head";
  tied.shares_with = "t0";
  tied.weights = "synthetic";
  r.tables.push_back(tied);
  model::TuneTable untuned;
  untuned.name = "other";
  untuned.tuned = false;
  untuned.weights = "synthetic";
  r.tables.push_back(untuned);
  return r;
}

TEST(Summary, WeightsHaveOneWordingEverywhere) {
  EXPECT_EQ(weights_text(with_tables(5, 0)), "recorded");
  EXPECT_EQ(weights_text(with_tables(0, 5)), "synthetic");
  const auto mixed = with_tables(4, 1);
  EXPECT_EQ(weights_text(mixed).rfind("recorded for 4 of 5 tables", 0), 0u) << weights_text(mixed);
  const auto lines = summary_lines(mixed);
  EXPECT_EQ(lines.at(1).rfind("weights: recorded for 4 of 5 tables", 0), 0u) << lines.at(1);
}

TEST(Summary, ATimeLimitStopSaysSoAndNamesTheOption) {
  auto r = with_tables(1, 0);
  r.complete = false;
  r.stop_reason = edo::model::StopReason::kTimeLimit;
  r.time_limit_s = 8;
  r.candidates_measured = 3;
  r.candidates_total = 40;
  EXPECT_NE(run_text(r).find("stopped by --time-limit 8 s"), std::string::npos) << run_text(r);
  // No plan fits among what was measured: the smallest budget named is theirs, and the text
  // says a longer run may find a smaller one (the "smallest feasible budget is 714 MiB"
  // after an 8 s run, where the full run found 2.2 MB).
  r.feasible = false;
  r.budget_bytes = 300u << 20;
  r.min_feasible_bytes = 714u << 20;
  const std::string v = verdict_text(r);
  EXPECT_NE(v.find("among the candidates measured before --time-limit stopped the run"), std::string::npos) << v;
  EXPECT_NE(v.find("--time-limit"), std::string::npos) << v;
  r.complete = true;
  r.stop_reason = edo::model::StopReason::kNone;
  EXPECT_EQ(verdict_text(r).find("--time-limit"), std::string::npos) << verdict_text(r);
  r.complete = false;
  r.stop_reason = edo::model::StopReason::kCancelled;
  EXPECT_NE(run_text(r).find("Ctrl-C"), std::string::npos) << run_text(r);
}

TEST(Summary, NamesTheObjective) {
  auto r = with_tables(1, 0);
  r.objective = edo::model::Objective::kLeastChange;
  bool found = false;
  for (const auto& l : summary_lines(r)) found = found || l.find("objective: least-change") != std::string::npos;
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace edo::tuner
