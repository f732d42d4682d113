// Issue 29: `edo diff --plan PLAN TRIAL [BASELINE]` on hand-built recordings whose right answer is
// known: the plan held, broke training at step N, its loss is off, its bytes are off, a table it
// could not apply; and `edo report` showing the training facts the PyTorch hooks record.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <tuple>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edo/db/profile_store.h"
#include "edo/db/tune_store.h"
#include "run_command.h"

namespace {

using edo::testing::run_command;
using nlohmann::json;
namespace model = edo::model;

const std::string kEdo = EDO_BIN;

std::string temp_path(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = std::filesystem::temp_directory_path() / ("edo-plan-trial-" + std::to_string(getpid()) + "-" + info->name());
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / name);
  return (dir / name).string();
}

// The plan the trials are judged by: emb.a to int8 (300 000 bytes), emb.b to fp16 (500 000),
// emb.c kept (100 000).
constexpr uint64_t kA = 300'000, kB = 500'000, kC = 100'000;

model::Table table(int64_t session, const std::string& name, uint64_t bytes) {
  model::Table t;
  t.session_id = session;
  t.name = name;
  t.rows = 1000;
  t.dim = 16;
  t.dtype = "fp32";
  t.device = "cuda";
  t.base_address = 0x10000 + std::hash<std::string>{}(name) % 4096 * 0x100000;
  t.weight_bytes = bytes;  // what the job held: the plan's bytes, or not
  return t;
}

// The one process of the recordings below.
model::Session training_session() {
  model::Session s;
  s.id = 1;
  s.command = "python3 train.py";
  s.host = "box";
  s.pid = 42;
  s.source = "record";
  return s;
}

// A recording of the job: 20 steps in `seconds`, the losses given (step i + 1 for the i-th),
// tables with these bytes, and the notes given.
std::string recording(const std::string& name, std::vector<double> losses, std::vector<uint64_t> bytes, double seconds = 2.0,
                      const std::map<std::string, std::string>& notes = {}) {
  model::Profile p;
  model::Session s = training_session();
  s.steps = 20;
  s.duration_ns = static_cast<int64_t>(seconds * 1e9);
  for (size_t i = 0; i < losses.size(); ++i) s.losses.push_back({i + 1, losses[i]});
  p.sessions.push_back(s);
  const char* names[] = {"emb.a", "emb.b", "emb.c"};
  for (size_t i = 0; i < bytes.size(); ++i) p.tables.push_back(table(1, names[i], bytes[i]));
  for (const auto& [k, v] : notes) p.metadata[k] = v;
  const std::string path = temp_path(name);
  edo::db::ProfileStore(path, edo::db::ProfileStore::Mode::kCreate).save(p);
  return path;
}

// 20 losses from 2.0 down by 0.05 a step, times `scale`: the final loss (mean of the last 2)
// is 1.075 * scale.
std::vector<double> curve(double scale = 1.0) {
  std::vector<double> l;
  for (int i = 0; i < 20; ++i) l.push_back(scale * (2.0 - 0.05 * i));
  return l;
}

std::string plan_file() {
  model::TuneResult r;
  r.backend = "cpu";
  r.device = "test";
  r.weights = "synthetic";
  r.budget_bytes = kA + kB + kC;
  r.feasible = true;
  for (const auto& [name, strategy, bytes] : {std::tuple{"emb.a", "int8", kA}, {"emb.b", "fp16", kB}, {"emb.c", "", kC}}) {
    model::TuneTable t;
    t.name = name;
    t.rows = 1000;
    t.dim = 16;
    t.dtype = "fp32";
    t.device_bytes = 4 * kC * 4;
    r.tables.push_back(t);
    model::TuneChoice ch;
    ch.table = name;
    ch.device_bytes = bytes;
    if (*strategy) {
      model::TuneCandidate c;
      c.table = name;
      c.strategy = strategy;
      c.spec = strategy;
      c.device_bytes = bytes;
      c.error = 0.01;
      c.measured = true;
      ch.candidate = static_cast<int64_t>(r.candidates.size());
      r.candidates.push_back(c);
    }
    r.choices.push_back(ch);
  }
  r.plan_device_bytes = kA + kB + kC;
  const std::string path = recording("plan.edodb", {}, {kC * 16, kC * 16, kC});
  edo::db::ProfileStore store(path, edo::db::ProfileStore::Mode::kReadWrite);
  edo::db::save_tune_result(store, r);
  return path;
}

struct Diff {
  int exit_code;
  std::string out, err;
  json j;
};

Diff diff(const std::string& args) {
  auto r = run_command(kEdo + " diff --plan " + args);
  auto rj = run_command(kEdo + " diff --json --plan " + args);
  EXPECT_EQ(r.exit_code, rj.exit_code) << "text and JSON agree on the exit code";
  Diff d{r.exit_code, r.out, r.err, json()};
  if (!rj.out.empty()) d.j = json::parse(rj.out);
  return d;
}

// The last line of the text: the verdict.
std::string verdict(const Diff& d) {
  std::string out = d.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out.substr(out.rfind('\n') + 1);
}

TEST(PlanTrial, HeldWhenBytesMatchLossesAreFiniteAndTheFinalLossIsClose) {
  const std::string plan = plan_file();
  // emb.b 0.5 % over its plan: within 1 %. The trial's final loss 2 % above the baseline's.
  const std::string trial = recording("trial.edodb", curve(1.02), {kA, kB + kB / 200, kC}, 2.0);
  const std::string base = recording("base.edodb", curve(), {kC * 16, kC * 16, kC}, 1.8);
  const Diff d = diff(plan + " " + trial + " " + base);
  EXPECT_EQ(d.exit_code, 0) << d.out << d.err;
  EXPECT_EQ(verdict(d).rfind("verdict: the plan held (", 0), 0u) << d.out;
  EXPECT_NE(d.out.find("+2.0 % (limit 10 %)"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("step time: 100 ms (trial) vs 90 ms (baseline): +11.1 %"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("mean of the last 2"), std::string::npos) << d.out;
  EXPECT_TRUE(d.j["held"].get<bool>());
  EXPECT_NEAR(d.j["losses"]["final_change"].get<double>(), 0.02, 1e-9);
  EXPECT_NEAR(d.j["losses"]["baseline"]["final"].get<double>(), 1.075, 1e-9);
  EXPECT_EQ(d.j["losses"]["trial"]["steps_with_loss"], 20);
  EXPECT_NEAR(d.j["step_time_s"]["trial"].get<double>(), 0.1, 1e-12);
  ASSERT_EQ(d.j["tables"].size(), 3u);
  for (const auto& t : d.j["tables"]) EXPECT_TRUE(t["judged"].get<bool>()) << t;
}

TEST(PlanTrial, BrokeTrainingAtTheFirstNonFiniteStep) {
  const std::string plan = plan_file();
  std::vector<double> losses = curve();
  losses[6] = std::nan("");                                   // step 7
  losses[9] = std::numeric_limits<double>::infinity();        // a later one does not matter
  const std::string trial = recording("trial.edodb", losses, {kA, kB, kC});
  const std::string base = recording("base.edodb", curve(), {kC * 16, kC * 16, kC});
  const Diff d = diff(plan + " " + trial + " " + base);
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_EQ(verdict(d), "verdict: the plan broke training at step 7 (loss nan)") << d.out;
  EXPECT_FALSE(d.j["held"].get<bool>());
  EXPECT_EQ(d.j["losses"]["trial"]["first_nonfinite_step"], 7);
  // Without a baseline it breaks just the same.
  EXPECT_EQ(verdict(diff(plan + " " + trial)), "verdict: the plan broke training at step 7 (loss nan)");
}

TEST(PlanTrial, LossOffByMoreThanTheLimit) {
  const std::string plan = plan_file();
  const std::string trial = recording("trial.edodb", curve(1.2), {kA, kB, kC});
  const std::string base = recording("base.edodb", curve(), {kC * 16, kC * 16, kC});
  Diff d = diff(plan + " " + trial + " " + base);
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_EQ(verdict(d), "verdict: the plan's loss is off by 20.0 % (limit 10 %)") << d.out;
  d = diff(plan + " " + trial + " " + base + " --max-loss-delta 0.25");
  EXPECT_EQ(d.exit_code, 0) << d.out;
  EXPECT_NE(verdict(d).find("limit 25 %"), std::string::npos) << d.out;
  // A lower loss is off too: the plan changed the training.
  const std::string lower = recording("lower.edodb", curve(0.8), {kA, kB, kC});
  EXPECT_EQ(verdict(diff(plan + " " + lower + " " + base)), "verdict: the plan's loss is off by 20.0 % (limit 10 %)");
}

TEST(PlanTrial, BytesOffForOneTable) {
  const std::string plan = plan_file();
  const std::string trial = recording("trial.edodb", curve(), {kA, kB + kB / 20, kC});  // emb.b +5 %
  const std::string base = recording("base.edodb", curve(), {kC * 16, kC * 16, kC});
  const Diff d = diff(plan + " " + trial + " " + base);
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_EQ(verdict(d), "verdict: the plan's bytes are off by 5.0 % for emb.b") << d.out;
  // Without a baseline: bytes and finiteness are judged, the loss is said not to be.
  const Diff alone = diff(plan + " " + trial);
  EXPECT_EQ(verdict(alone), "verdict: the plan's bytes are off by 5.0 % for emb.b");
  EXPECT_NE(alone.out.find("the loss comparison needs one"), std::string::npos) << alone.out;
}

TEST(PlanTrial, TablesTheTrialCouldNotApplyAreNotJudgedOnBytes) {
  const std::string plan = plan_file();
  // emb.b kept fp32 (16x its planned bytes): the apply said it could not.
  const std::string note =
      R"({"plan": "plan.json", "tables": {"emb.a": {"strategy": "int8", "applied": true, "before_bytes": 64000,)"
      R"( "after_bytes": 300000}, "emb.b": {"strategy": "fp16", "applied": false, "why": ""}}})";
  const std::string trial =
      recording("trial.edodb", curve(), {kA, kC * 16, kC}, 2.0, {{"session.1.pytorch.plan_applied", note}, {"pytorch.plan_applied", note}});
  const std::string base = recording("base.edodb", curve(), {kC * 16, kC * 16, kC});
  Diff d = diff(plan + " " + trial + " " + base);
  EXPECT_EQ(d.exit_code, 0) << d.out;
  EXPECT_NE(d.out.find("not applied (needs TorchRec/FBGEMM)"), std::string::npos) << d.out;
  EXPECT_NE(verdict(d).find("bytes within 1 % for 2 applied table(s)"), std::string::npos) << d.out;
  const auto& b = *std::find_if(d.j["tables"].begin(), d.j["tables"].end(), [](const json& t) { return t["name"] == "emb.b"; });
  EXPECT_FALSE(b["applied"].get<bool>());
  EXPECT_FALSE(b["judged"].get<bool>());
  // The apply's own reason, when it gave one.
  std::string why = note;
  why.replace(why.find(R"("why": "")"), 9, R"("why": "offload needs a CUDA device")");
  const std::string trial2 = recording("trial2.edodb", curve(), {kA, kC * 16, kC}, 2.0, {{"session.1.pytorch.plan_applied", why}});
  d = diff(plan + " " + trial2 + " " + base);
  EXPECT_EQ(d.exit_code, 0);
  EXPECT_NE(d.out.find("not applied (offload needs a CUDA device)"), std::string::npos) << d.out;
  // Without the note the same trial's bytes are off.
  const std::string silent = recording("silent.edodb", curve(), {kA, kC * 16, kC});
  EXPECT_EQ(verdict(diff(plan + " " + silent + " " + base)), "verdict: the plan's bytes are off by 220.0 % for emb.b");
}

TEST(PlanTrial, BadInputIsOneLineAndExit1BadFlagsExit2) {
  const std::string plan = plan_file();
  const std::string trial = recording("trial.edodb", curve(), {kA, kB, kC});
  const auto one_line = [](const edo::testing::CommandResult& r) {
    return std::count(r.err.begin(), r.err.end(), '\n') == 1 && r.out.empty();
  };
  auto r = run_command(kEdo + " diff --plan " + plan + " " + temp_path("missing.edodb"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(one_line(r)) << r.out << r.err;
  const std::string text = temp_path("not-a-db.edodb");
  std::ofstream(text) << "hello\n";
  r = run_command(kEdo + " diff --plan " + plan + " " + trial + " " + text);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(one_line(r)) << r.out << r.err;
  EXPECT_NE(r.err.find("not an edo database"), std::string::npos) << r.err;
  const std::string bad_plan = temp_path("plan.json");
  std::ofstream(bad_plan) << "{\"schema\": \"edo.plan/1\", \"tables\": 3}";
  r = run_command(kEdo + " diff --plan " + bad_plan + " " + trial);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(one_line(r)) << r.out << r.err;
  EXPECT_EQ(run_command(kEdo + " diff --plan " + plan + " " + trial + " --max-loss-delta -1").exit_code, 2);
  EXPECT_EQ(run_command(kEdo + " diff --plan " + plan + " " + trial + " " + trial + " " + trial).exit_code, 2);
  EXPECT_EQ(run_command(kEdo + " diff " + trial + " " + trial + " --max-loss-delta 0.2").exit_code, 2);
}

// `edo report` shows the optimizer and dense use of each table and the loss curve of each
// process, compactly; --json has them in full (non-finite losses as "nan", "inf", "-inf").
TEST(ReportTraining, OptimizerDenseUseAndLossesInTextAndJson) {
  model::Profile p;
  model::Session s = training_session();
  s.losses = {{1, 2.5}, {2, std::numeric_limits<double>::infinity()}, {3, 1.5}};
  p.sessions.push_back(s);
  p.tables.push_back(table(1, "emb.a", kA));
  p.tables.push_back(table(1, "lm_head", kB));
  p.tables[0].optimizer_params = model::OptimizerParams{"adam", 0.001, 1e-8, 0, 0.9, 0.999, 0, 0, false};
  p.tables[1].dense_use = "the gradient reached 1000 of 1000 rows";
  const std::string path = temp_path("facts.edodb");
  edo::db::ProfileStore(path, edo::db::ProfileStore::Mode::kCreate).save(p);
  auto r = run_command(kEdo + " report --wide " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("emb.a: adam lr=0.001 betas=0.9,0.999 eps=1e-08"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lm_head: read whole: the gradient reached 1000 of 1000 rows"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loss: 3 steps from 2.5 (step 1) to 1.5 (step 3)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first non-finite: step 2 (inf)"), std::string::npos) << r.out;
  r = run_command(kEdo + " report --json " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  const json& l = j["sessions"][0]["losses"];
  EXPECT_EQ(l["steps_with_loss"], 3);
  EXPECT_EQ(l["first"]["loss"], 2.5);
  EXPECT_EQ(l["last"]["step"], 3);
  EXPECT_EQ(l["first_nonfinite_step"], 2);
  for (const auto& t : j["tables"]) {
    if (t["name"] == "emb.a") {
      EXPECT_EQ(t["optimizer_params"]["kind"], "adam");
      EXPECT_EQ(t["optimizer_params"]["betas"][1], 0.999);
      EXPECT_TRUE(t["dense_use"].is_null());
    } else {
      EXPECT_TRUE(t["optimizer_params"].is_null());
      EXPECT_EQ(t["dense_use"], "the gradient reached 1000 of 1000 rows");
    }
  }
}

}  // namespace
