// Representative measuring (issue 19 point 8, docs/tuning.md "Representatives"): tables are
// grouped into timing classes, one representative per class is timed, the others' times are
// predicted from its per-lookup time; the plan says which. On a fake backend whose passes cost
// a fixed time per lookup and format (no wall clock), so what is predicted can be compared
// with what measuring every table gives.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "edo/kernels/backend.h"
#include "edo/kernels/strategy.h"
#include "edo/tuner/plan_io.h"
#include "edo/tuner/tuner.h"
#include "representatives.h"
#include "recordings.h"
#include "workload.h"

namespace edo::tuner {
namespace {

// Seconds per lookup of each format (fp16 and int8 faster than fp32, offload slower).
double per_lookup_s(const std::string& strategy) {
  static const std::map<std::string, double> s{{"fp32", 4e-9}, {"fp16", 3e-9}, {"int8", 2.5e-9}, {"offload", 6e-9}, {"pruned", 3.5e-9}};
  auto it = s.find(strategy);
  return it == s.end() ? 5e-9 : it->second;
}

// A pass costs its lookups times the format's per-lookup time, and `spin` of real time (the
// time-limit test: measuring must take time for a limit to stop it).
struct LookupTable : kernels::LoadedTable {
  LookupTable(double seconds, uint64_t indices, std::chrono::microseconds spin)
      : kernels::LoadedTable(indices), seconds_(seconds), spin_(spin) {}
  double pass(bool) override {
    if (spin_.count() > 0) {
      const auto until = std::chrono::steady_clock::now() + spin_;
      while (std::chrono::steady_clock::now() < until) {
      }
    }
    return seconds_;
  }
  double seconds_;
  std::chrono::microseconds spin_;
};

struct LookupBackend : kernels::Backend {
  explicit LookupBackend(std::chrono::microseconds spin = std::chrono::microseconds(0)) : spin(spin) {}
  std::string name() const override { return "fake"; }
  std::string description() const override { return "fake: a fixed time per lookup and format"; }
  std::unique_ptr<kernels::LoadedTable> load(const kernels::EncodedTable& table, const kernels::Workload& work) override {
    ++loads;
    return std::make_unique<LookupTable>(per_lookup_s(table.strategy()) * static_cast<double>(work.indices()), work.indices(), spin);
  }
  std::chrono::microseconds spin;
  int loads = 0;
};

// `n` tables of a few shapes and skews (row counts and Zipf exponents in small sets, a
// varied number of lookups), as `edo synth --min-rows` makes them.
model::Profile many_tables(int n, uint64_t lookups) {
  const uint64_t rows[] = {1500, 2500, 9000, 40000};
  const double zipf[] = {0.6, 1.2};
  std::vector<model::Table> tables;
  for (int t = 0; t < n; ++t)
    tables.push_back(testing::synthetic_table("t" + std::to_string(t), rows[t % 4], 8, zipf[(t / 4) % 2],
                                              lookups + static_cast<uint64_t>(t % 7) * 100, 1000 + static_cast<uint64_t>(t)));
  return testing::synthetic_profile(std::move(tables), 4);
}

TuneOptions fast_options() {
  TuneOptions o;
  o.budget_bytes = uint64_t{1} << 40;
  o.min_rep_s = 0;  // one pass per repetition: the fake's passes take no time
  o.reps = 3;
  o.strategies = "fp16,int8,offload,pruned";
  return o;
}

TEST(Representatives, AThousandTablesTuneToCompletionMeasuringOneTablePerClass) {
  const model::Profile p = many_tables(1000, 3000);
  const TuneOptions o = fast_options();
  const Workload w = build_workload(p, {}, "*");
  const TimingClasses classes = timing_classes(w, true);
  ASSERT_GT(classes.classes, 1u);
  ASSERT_LT(classes.classes, 100u) << "1000 tables of 8 shapes and skews: far fewer classes than tables";
  LookupBackend backend;
  const model::TuneResult r = tune(p, {}, o, backend);
  EXPECT_TRUE(r.complete) << edo::model::to_string(r.stop_reason);
  EXPECT_EQ(edo::model::to_string(r.stop_reason), "");
  ASSERT_TRUE(r.feasible);
  ASSERT_EQ(r.choices.size(), 1000u);
  // Every table has a time; the tables timed for real are the classes' representatives.
  std::set<std::string> measured, predicted;
  for (const auto& c : r.candidates) {
    if (c.timing_kind == edo::model::TimingKind::kMeasured) measured.insert(c.table);
    if (c.timing_kind == edo::model::TimingKind::kPredicted) predicted.insert(c.table);
    EXPECT_TRUE(c.usable() || c.not_timed == edo::model::NotTimedCause::kOverErrorLimit) << c.table << " " << c.spec << ": " << c.note;
  }
  EXPECT_EQ(measured.size(), classes.classes);
  EXPECT_GT(predicted.size(), 800u);
  for (const auto& t : measured) EXPECT_EQ(predicted.count(t), 0u) << t << " is both measured and predicted";
  // The plan says, per table, where its time comes from.
  const auto j = plan_to_json(r);
  size_t said_predicted = 0;
  for (const auto& t : j["tables"]) {
    ASSERT_TRUE(t["timing_source"].is_object()) << t.dump();
    const std::string kind = t["timing_source"]["kind"];
    if (kind == "predicted") {
      ++said_predicted;
      EXPECT_TRUE(t["timing_source"]["from"].is_string());
      EXPECT_NE(t["why"].get<std::string>().find("time predicted from"), std::string::npos) << t["why"];
    } else {
      EXPECT_TRUE(kind == "measured" || kind == "twin") << kind;
    }
  }
  EXPECT_GT(said_predicted, 0u);
}

// Two tables of one class (same shape and skew bucket) with 1.5x the lookups per step: the
// member's time for each format is the representative's per-lookup time times its own lookups,
// which on this backend (a fixed time per lookup) is what measuring it gives.
TEST(Representatives, APredictedTableFollowsItsRepresentativesPerLookupTime) {
  std::vector<model::Table> tables{testing::synthetic_table("a", 6000, 8, 1.1, 20000, 3),
                                   testing::synthetic_table("b", 6000, 8, 1.1, 30000, 4)};
  const model::Profile p = testing::synthetic_profile(tables, 10);
  const Workload w = build_workload(p, {}, "*");
  ASSERT_EQ(w.groups.size(), 2u);
  ASSERT_EQ(class_key(w.groups[0]), class_key(w.groups[1])) << "the two tables must share a class";
  TuneOptions o = fast_options();
  o.max_error = INFINITY;
  LookupBackend one;
  const model::TuneResult r = tune(p, {}, o, one);
  o.representatives = false;
  LookupBackend every;
  const model::TuneResult all = tune(p, {}, o, every);
  EXPECT_LT(one.loads, every.loads) << "the member was not measured";

  std::map<std::string, double> lookups;
  for (const auto& t : r.tables) lookups[t.name] = t.lookups_per_step;
  ASSERT_DOUBLE_EQ(lookups["b"] / lookups["a"], 1.5);
  std::string rep, member;
  for (const auto& c : r.candidates)
    if (c.timing_kind == edo::model::TimingKind::kPredicted) {
      member = c.table;
      rep = c.timing_from;
    }
  ASSERT_FALSE(member.empty()) << "one table's times are predicted";
  ASSERT_NE(rep, member);
  size_t compared = 0;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const auto& c = r.candidates[i];
    if (c.table != member || !c.usable()) continue;
    EXPECT_EQ(edo::model::to_string(c.timing_kind), "predicted") << c.spec;
    EXPECT_EQ(c.timing_from, rep);
    // The representative's candidate of the same spec (offload: its cache sizes are its own).
    const model::TuneCandidate* src = nullptr;
    for (const auto& x : r.candidates)
      if (x.table == rep && x.strategy == c.strategy && x.optimizer == c.optimizer && (x.spec == c.spec || c.strategy == "offload" || c.strategy == "pruned"))
        if (!src) src = &x;
    ASSERT_NE(src, nullptr) << c.spec;
    EXPECT_EQ(edo::model::to_string(src->timing_kind), "measured");
    if (c.strategy != "offload") {
      EXPECT_NEAR(c.step_us, src->step_us / lookups[rep] * lookups[member], 1e-9 * c.step_us) << c.spec;
      // ... and what measuring the member itself gives (the backend's time per lookup).
      EXPECT_NEAR(c.step_us, per_lookup_s(c.strategy) * lookups[member] * 1e6, 1e-6 * c.step_us) << c.spec;
    }
    // Measured for real (every table measured): the same time.
    const auto& real = all.candidates[i];
    ASSERT_EQ(real.spec, c.spec);
    EXPECT_EQ(edo::model::to_string(real.timing_kind), "measured");
    if (c.strategy != "offload") {
      EXPECT_NEAR(real.step_us, c.step_us, 1e-6 * c.step_us) << c.spec;
    }
    // Bytes are the member's own, never the representative's.
    EXPECT_EQ(real.device_bytes, c.device_bytes);
    ++compared;
  }
  EXPECT_GE(compared, 3u);
}

// The time limit still stops a run, and honestly: what was measured or predicted from a measured
// representative has a time; everything else says it was not measured, and a member of a class
// whose representative was not measured says so; nothing is predicted from nothing.
TEST(Representatives, TheTimeLimitStopsARunHonestly) {
  const model::Profile p = many_tables(200, 3000);
  TuneOptions o = fast_options();
  o.time_limit_s = 0.2;
  // Each pass spins 1 ms: a candidate's warm-up and paired repetitions take 7 ms at least,
  // and the representatives' candidates alone take well over the limit.
  LookupBackend backend(std::chrono::microseconds(1000));
  const model::TuneResult r = tune(p, {}, o, backend);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(edo::model::to_string(r.stop_reason), "time limit");
  std::map<std::pair<std::string, std::string>, const model::TuneCandidate*> by;
  for (const auto& c : r.candidates) by[{c.table, c.spec}] = &c;
  size_t not_measured = 0, waiting_for_representative = 0;
  for (const auto& c : r.candidates) {
    if (c.usable()) {
      ASSERT_TRUE(c.timing_kind == edo::model::TimingKind::kMeasured || c.timing_kind == edo::model::TimingKind::kPredicted || c.timing_kind == edo::model::TimingKind::kTwin) << edo::model::to_string(c.timing_kind);
      if (c.timing_kind != edo::model::TimingKind::kMeasured) {
        bool source_usable = false;
        for (const auto& x : r.candidates)
          if (x.table == c.timing_from && x.strategy == c.strategy && x.usable() && x.timing_kind == edo::model::TimingKind::kMeasured) source_usable = true;
        EXPECT_TRUE(source_usable) << c.table << " " << c.spec << " predicted from " << c.timing_from << " which has no time";
      }
    } else {
      EXPECT_EQ(edo::model::to_string(c.timing_kind), "") << c.table << " " << c.spec;
      EXPECT_NE(c.not_timed, edo::model::NotTimedCause::kNone) << c.note;
      EXPECT_TRUE(c.note.rfind("not measured", 0) == 0 || c.note.rfind("not timed", 0) == 0) << c.note;  // what the user reads
      ++not_measured;
      waiting_for_representative += c.not_timed == edo::model::NotTimedCause::kRepresentativeNot;
    }
  }
  EXPECT_GT(not_measured, 0u);
  EXPECT_GT(waiting_for_representative, 0u);
}

// The plan document says where each table's time comes from, and reads it back; a kind it
// does not know is refused in one line.
TEST(Representatives, ThePlanDocumentCarriesTheTimingSource) {
  model::TuneResult r;
  r.objective = edo::model::Objective::kSpeed;
  r.backend = "cpu";
  r.device = "a CPU";
  r.weights = "synthetic";
  for (const char* name : {"rep", "member"}) {
    model::TuneTable t;
    t.name = name;
    t.rows = 1000;
    t.dim = 16;
    t.dtype = "fp32";
    t.device_bytes = 64000;
    t.lookups_per_step = 10;
    r.tables.push_back(t);
    model::TuneCandidate c;
    c.table = name;
    c.strategy = c.spec = "fp32";
    c.step_us = 10;
    c.error = 0;
    c.device_bytes = 64000;
    c.measured = true;
    c.timing_kind = std::string(name) == "rep" ? edo::model::TimingKind::kMeasured : edo::model::TimingKind::kPredicted;
    c.timing_from = std::string(name) == "rep" ? "" : "rep";
    r.candidates.push_back(c);
  }
  replan(r, 1 << 20, INFINITY);
  ASSERT_TRUE(r.feasible);
  auto j = plan_to_json(r);
  EXPECT_EQ(j["tables"][0]["timing_source"], nlohmann::ordered_json({{"kind", "measured"}, {"from", nullptr}}));
  EXPECT_EQ(j["tables"][1]["timing_source"], nlohmann::ordered_json({{"kind", "predicted"}, {"from", "rep"}}));
  EXPECT_NE(j["tables"][1]["why"].get<std::string>().find("time predicted from rep"), std::string::npos);
  const model::TuneResult back = plan_from_json(j);
  ASSERT_EQ(back.candidates.size(), 2u);
  EXPECT_EQ(edo::model::to_string(back.candidates[1].timing_kind), "predicted");
  EXPECT_EQ(back.candidates[1].timing_from, "rep");
  j["tables"][1]["timing_source"]["kind"] = "guessed";
  try {
    plan_from_json(j);
    ADD_FAILURE() << "an unknown timing source was accepted";
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("\"guessed\" is not measured, twin or predicted"), std::string::npos) << e.what();
  }
}

// Classes: only what a per-lookup time depends on separates tables; twins (same counts) are
// timed as each other exactly.
TEST(Representatives, ClassesSeparateShapesAndSkewsAndKeepTwins) {
  std::vector<model::Table> tables{testing::synthetic_table("a", 6000, 8, 1.1, 20000, 3),
                                   testing::synthetic_table("a_twin", 6000, 8, 1.1, 20000, 3),
                                   testing::synthetic_table("wide", 6000, 16, 1.1, 20000, 3),
                                   testing::synthetic_table("large", 600000, 8, 1.1, 20000, 3),
                                   testing::synthetic_table("half", 6000, 8, 1.1, 20000, 3, "fp16")};
  const model::Profile p = testing::synthetic_profile(tables, 10);
  const Workload w = build_workload(p, {}, "*");
  const TimingClasses c = timing_classes(w, true);
  EXPECT_EQ(c.classes, 4u);
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < w.groups.size(); ++i) at[w.groups[i].name] = i;
  const size_t a = at["a"], twin = at["a_twin"];
  // One of the two is measured, the other is its twin.
  EXPECT_TRUE((c.source[twin] == static_cast<int>(a) && c.twin[twin]) || (c.source[a] == static_cast<int>(twin) && c.twin[a]));
  for (const char* alone : {"wide", "large", "half"}) EXPECT_EQ(c.source[at[alone]], -1) << alone;
}

}  // namespace
}  // namespace edo::tuner
