// The plan's top-level keys, declared once (tuner/src/io/plan_header_fields.h): every one written
// and read back the same through JSON and YAML, a null that stands for "none" read as the
// member's default, and a value of the wrong type or range refused in one line naming the key.
#include <gtest/gtest.h>

#include <string>

#include "edo/tuner/plan_io.h"
#include "plan_document.h"
#include "plan_fields.h"
#include "plan_header_fields.h"

namespace edo {
namespace {

// A run with every declared top-level member away from its default (no tables: nothing to
// choose), and a feasible plan with totals.
model::TuneResult header_only_run() {
  model::TuneResult r;
  r.budget_bytes = 1 << 20;
  r.max_error = 0.02;
  r.backend = "cuda";
  r.device = "NVIDIA H200";
  r.weights = "synthetic";
  r.baseline_device_bytes = 4 << 20;
  r.baseline_step_us = 812.5;
  r.baseline_host_bytes = 7;
  r.feasible = true;
  r.plan_device_bytes = 1 << 19;
  r.plan_step_us = 900.25;
  r.plan_host_bytes = 3 << 20;
  r.plan_ssd_bytes = 11;
  r.candidates_measured = 12;
  r.candidates_total = 40;
  r.min_feasible_bytes = 1 << 18;
  r.complete = false;
  r.stop_reason = model::StopReason::kTimeLimit;
  r.elapsed_s = 61.5;
  r.time_limit_s = 60;
  r.seed = 7;
  r.tables_glob = "emb.*";
  r.created_unix = 1'764'000'000;
  r.objective = model::Objective::kLeastChange;
  r.allow_unvalidated = true;
  r.fine_tune = true;
  r.host_budget_bytes = 5 << 20;
  r.ssd_budget_bytes = 9 << 20;
  r.timing_kind = model::RunTiming::kModelled;
  r.timing_device = "NVIDIA B200";
  r.notes = {"a note"};
  r.devices = 1;
  return r;
}

TEST(PlanHeader, EveryTopLevelKeyTravelsThroughJsonAndYaml) {
  const model::TuneResult r = header_only_run();
  const std::string json = tuner::plan_to_json_text(r);
  for (const std::string& text : {json, tuner::plan_to_yaml(r)}) {
    const model::TuneResult back = tuner::plan_from_text(text);
    EXPECT_EQ(tuner::plan_to_json_text(back), json);
    EXPECT_EQ(back.host_budget_bytes, 5u << 20);
    EXPECT_EQ(back.timing_device, "NVIDIA B200");
    EXPECT_EQ(back.plan_ssd_bytes, 11u);
  }
  // The keys in the goldens' order: the head, the totals, then the run's after the frontier.
  const auto doc = tuner::plan_to_json(r);
  std::string keys;
  for (auto it = doc.begin(); it != doc.end(); ++it) keys += it.key() + " ";
  EXPECT_EQ(keys,
            "schema budget_bytes max_error backend device weights baseline plan tables frontier candidates_measured "
            "candidates_total feasible min_feasible_bytes complete stop_reason elapsed_s time_limit_s seed tables_glob "
            "created_unix objective allow_unvalidated fine_tune host_budget_bytes ssd_budget_bytes weights_text timing "
            "notes devices ");
}

TEST(PlanHeader, NoneIsNullAndReadsBackAsTheDefault) {
  model::TuneResult r = header_only_run();
  r.stop_reason = model::StopReason::kNone;
  r.time_limit_s = 0;
  r.host_budget_bytes = 0;
  const auto doc = tuner::plan_to_json(r);
  EXPECT_TRUE(doc["stop_reason"].is_null());
  EXPECT_TRUE(doc["time_limit_s"].is_null());
  EXPECT_TRUE(doc["host_budget_bytes"].is_null());
  EXPECT_EQ(doc["ssd_budget_bytes"], 9u << 20);
  const model::TuneResult back = tuner::plan_from_json(doc);
  EXPECT_EQ(back.stop_reason, model::StopReason::kNone);
  EXPECT_EQ(back.time_limit_s, 0);
  EXPECT_EQ(back.host_budget_bytes, 0u);
  // A plan written before a key existed lacks it: its default.
  auto older = doc;
  older.erase("fine_tune");
  older.erase("devices");
  EXPECT_FALSE(tuner::plan_from_json(older).fine_tune);
  EXPECT_EQ(tuner::plan_from_json(older).devices, 1u);
}

TEST(PlanHeader, AWrongTypeOrRangeIsOneLineNamingTheKey) {
  const auto doc = tuner::plan_to_json(header_only_run());
  auto refused = [&](const char* key, const nlohmann::ordered_json& value) {
    auto bad = doc;
    bad[key] = value;
    try {
      (void)tuner::plan_from_json(bad);
      return std::string("accepted");
    } catch (const tuner::PlanError& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(refused("devices", 0), "not a valid edo plan: the plan: \"devices\" is 0, outside 1..65536");
  EXPECT_EQ(refused("seed", "x"), "not a valid edo plan: the plan: \"seed\" is not a byte count (a whole number >= 0)");
  EXPECT_EQ(refused("fine_tune", 1), "not a valid edo plan: the plan: \"fine_tune\" is not true or false");
  EXPECT_EQ(refused("budget_bytes", nullptr), "not a valid edo plan: the plan: \"budget_bytes\" is not a byte count (a whole number >= 0)");
  EXPECT_EQ(refused("feasible", false), "not a valid edo plan: \"feasible\" disagrees with \"plan\"");
  EXPECT_EQ(refused("objective", "cheapest"), "not a valid edo plan: the plan: \"objective\" is \"cheapest\", not speed or least-change");
}

}  // namespace
}  // namespace edo
