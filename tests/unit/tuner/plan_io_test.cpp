// Plan documents: JSON and YAML say the same thing and read back; table names are exact data
// in every format (quotes, newlines, escape sequences, code, non-ASCII), never code in the
// TorchRec file (checked by importing it with Python); plan import refuses malformed plans
// with one line.
#include "edo/model/strategy_params_json.h"
#include "edo/tuner/plan_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace edo::tuner {
namespace {

using model::TuneCandidate;
using model::TuneChoice;
using model::TuneResult;
using model::TuneTable;

const std::vector<std::string>& hostile_names() {
  static const std::vector<std::string> n = {
      "model.emb.\"quoted\"",
      "line\nbreak",
      "tab\there\r",
      "\x1b[31mred\x1b[0m",
      "\"); import os; os.system(\"touch /tmp/pwned\") #",
      "'''\\\" + __import__('os').getcwd() + \"",
      "表格.嵌入",
      "emoji 😀 \u202e override",
      "{{braces}} %s %n $HOME `id`",
      "- yaml: [list]\n  key: value",
  };
  return n;
}

TuneCandidate cand(const std::string& table, const std::string& strategy, const std::string& spec, const std::string& params,
                   uint64_t device, uint64_t host, double us, double err) {
  TuneCandidate c;
  c.table = table;
  c.strategy = strategy;
  c.spec = spec;
  c.params = model::params_from_text(params);
  c.device_bytes = device;
  c.host_bytes = host;
  c.step_us = us;
  c.error = err;
  c.measured = true;
  c.measured_rows = 1000;
  return c;
}

// Names 0..k: fp32 baseline, int8, offload (LRU), pq, a table tied to name 0, and one untuned.
TuneResult sample_plan() {
  const auto& n = hostile_names();
  TuneResult r;
  r.backend = "cpu";
  r.device = "Fake \"CPU\"\n@ 3 GHz";
  r.weights = "recorded";
  r.budget_bytes = uint64_t{3} << 30;
  r.max_error = 0.05;
  r.seed = 7;
  r.candidates_total = 40;
  r.candidates_measured = 31;
  r.complete = false;
  r.stop_reason = edo::model::StopReason::kTimeLimit;
  r.notes = {"a note with \"quotes\"\nand a newline"};
  r.feasible = true;
  r.baseline_device_bytes = 5000000;
  r.baseline_step_us = 100;
  r.plan_device_bytes = 2000000;
  r.plan_host_bytes = 1000000;
  r.plan_step_us = 120.5;
  r.min_feasible_bytes = 900000;
  r.frontier = {{900000, 300.25}, {2000000, 120.5}, {5000000, 100}};
  auto table = [&](const std::string& name, const std::string& owner, bool tuned, const std::string& opt) {
    TuneTable t;
    t.name = name;
    t.rows = 100000;
    t.dim = 16;
    t.dtype = "fp32";
    t.device_bytes = owner.empty() ? 6400000 : 0;
    t.lookups_per_step = 512;
    t.tuned = tuned;
    t.shares_with = owner;
    t.weights = "recorded";
    t.optimizer = opt;
    t.training = !opt.empty();  // as the tuner records a table with optimizer state
    r.tables.push_back(t);
  };
  table(n[0], "", true, "adam");
  table(n[1], "", true, "");
  table(n[2], "", true, "");
  table(n[3], "", true, "");
  table(n[4], n[0], true, "adam");
  table(n[5], "", false, "");
  r.candidates.push_back(cand(n[0], "fp32", "fp32", "{}", 6400000, 0, 10, 0));
  r.candidates.push_back(cand(n[1], "int8", "int8", "{}", 2400000, 0, 7.5, 0.004));
  TuneCandidate off = cand(n[2], "offload", "offload:cache=0.0500005:policy=lru", R"({"cache_rows":5000,"policy":"lru"})", 720000,
                           6400000, 30, 0);
  off.hit_rate = 0.91;
  off.recorded_hit_rate = 0.93;
  r.candidates.push_back(off);
  TuneCandidate pq = cand(n[3], "pq", "pq:m=2", R"({"m":2,"k":256})", 232768, 0, 5, 0.2);
  pq.optimizer = "rowwise_adagrad";
  pq.needs_retraining = true;
  r.candidates.push_back(pq);
  r.choices.push_back({n[0], 0, "", 6400000, 0, 8, "kept", "", {}});
  r.choices.push_back({n[1], 1, "", 2400000, 0, 7.5, "int8 \"why\"\n", "", {}});
  r.choices.push_back({n[2], 2, "", 720000, 6400000, 30, "offload", "", {}});
  r.choices.push_back({n[3], 3, "", 232768, 0, 5, "pq", "", {}});
  r.choices.push_back({n[4], 0, n[0], 0, 0, 2, "tied", "", {}});
  r.choices.push_back({n[5], -1, "", 6400000, 0, 0, "not tuned", "", {}});
  return r;
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / ("edo-plan-io-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

void expect_same_plan(const TuneResult& a, const TuneResult& b) {
  EXPECT_EQ(plan_to_json(a).dump(), plan_to_json(b).dump());
}

TEST(PlanJson, HasTheDocumentedShapeAndNamesExact) {
  const TuneResult r = sample_plan();
  const auto j = nlohmann::json::parse(plan_to_json_text(r));
  EXPECT_EQ(j["schema"], "edo.plan/1");
  EXPECT_EQ(j["budget_bytes"], uint64_t{3} << 30);
  EXPECT_EQ(j["max_error"], 0.05);
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["device"], r.device);
  EXPECT_EQ(j["weights"], "recorded");
  EXPECT_EQ(j["baseline"]["device_bytes"], 5000000);
  EXPECT_EQ(j["plan"]["step_us"], 120.5);
  EXPECT_EQ(j["candidates_measured"], 31);
  ASSERT_EQ(j["tables"].size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(j["tables"][i]["name"], hostile_names()[i]) << i;
  for (const char* key : {"name", "strategy", "params", "device_bytes", "host_bytes", "step_us", "error", "hit_rate",
                          "needs_retraining", "why"})
    for (const auto& t : j["tables"]) EXPECT_TRUE(t.contains(key)) << key;
  EXPECT_EQ(j["tables"][2]["hit_rate"], 0.91);
  EXPECT_EQ(j["tables"][2]["params"]["cache_rows"], 5000);
  EXPECT_TRUE(j["tables"][0]["hit_rate"].is_null());
  EXPECT_EQ(j["tables"][4]["strategy"], "shared");
  EXPECT_EQ(j["tables"][4]["params"]["with"], hostile_names()[0]);
  EXPECT_EQ(j["tables"][5]["strategy"], "unchanged");
  EXPECT_EQ(j["frontier"][0][0], 900000);
  EXPECT_EQ(j["frontier"][0][1], 300.25);
}

TEST(PlanJson, InfeasiblePlanHasNullPlanAndNoTables) {
  TuneResult r = sample_plan();
  r.feasible = false;
  const auto j = nlohmann::json::parse(plan_to_json_text(r));
  EXPECT_TRUE(j["plan"].is_null());
  EXPECT_TRUE(j["tables"].empty());
  EXPECT_EQ(j["min_feasible_bytes"], 900000);
  expect_same_plan(plan_from_text(plan_to_json_text(r)), r);
}

TEST(PlanJson, NonFiniteNumbersAreNullAndInvalidUtf8IsReplaced) {
  TuneResult r = sample_plan();
  r.max_error = INFINITY;
  r.candidates[1].error = NAN;
  r.choices[1].table = "bad\xff\xfe name";
  r.tables[1].name = r.choices[1].table;
  const auto j = nlohmann::json::parse(plan_to_json_text(r));
  EXPECT_TRUE(j["max_error"].is_null());
  EXPECT_TRUE(j["tables"][1]["error"].is_null());
  EXPECT_EQ(j["tables"][1]["name"], "bad\xEF\xBF\xBD\xEF\xBF\xBD name");
}

TEST(PlanImport, JsonAndYamlReadBackToTheSamePlan) {
  const TuneResult r = sample_plan();
  const TuneResult from_json = plan_from_text(plan_to_json_text(r));
  expect_same_plan(from_json, r);
  const TuneResult from_yaml = plan_from_text(plan_to_yaml(r));
  expect_same_plan(from_yaml, r);
  ASSERT_EQ(from_yaml.choices.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(from_yaml.choices[i].table, hostile_names()[i]);
  EXPECT_EQ(from_yaml.choices[4].shares_with, hostile_names()[0]);
  EXPECT_DOUBLE_EQ(from_yaml.max_error, 0.05);
  EXPECT_EQ(from_yaml.frontier, r.frontier);
}

// The SSD tier (issue 35 point 2): each table's tier and bytes on the SSD, the plan's total on
// it and the host and SSD budgets are in the JSON and YAML and read back; a plan written before
// has none of them and reads as nothing on the SSD and no limit.
TEST(PlanImport, TheSsdTierAndPerTierBudgetsReadBack) {
  TuneResult r = sample_plan();
  TuneCandidate s = cand(hostile_names()[1], "ssd", "fp32",
                         R"({"device_cache_rows":100,"host_cache_rows":2000,"device_hit_rate":0.5,"host_hit_rate":0.3,)"
                         R"("ssd_reads_per_step":102.4,"cache_policy":"lru"})",
                         9000, 128000, 55, 0);
  s.ssd_bytes = 6400000;
  r.candidates.push_back(s);
  r.choices[1] = {hostile_names()[1], 4, "", 9000, 128000, 55, "ssd", "", {}};
  r.choices[1].ssd_bytes = 6400000;
  r.plan_ssd_bytes = 6400000;
  r.host_budget_bytes = 200000;
  r.ssd_budget_bytes = uint64_t{1} << 40;
  const auto j = nlohmann::json::parse(plan_to_json_text(r));
  EXPECT_EQ(j["tables"][1]["tier"], "ssd");
  EXPECT_EQ(j["tables"][1]["ssd_bytes"], 6400000);
  EXPECT_EQ(j["tables"][1]["params"]["host_cache_rows"], 2000);
  EXPECT_EQ(j["tables"][2]["tier"], "host");
  EXPECT_EQ(j["tables"][0]["tier"], "device");
  EXPECT_EQ(j["tables"][4]["tier"], "device");  // tied to table 0: its owner's tier
  EXPECT_EQ(j["tables"][0]["ssd_bytes"], 0);
  EXPECT_EQ(j["plan"]["ssd_bytes"], 6400000);
  EXPECT_EQ(j["host_budget_bytes"], 200000);
  EXPECT_EQ(j["ssd_budget_bytes"], uint64_t{1} << 40);
  for (const TuneResult& back : {plan_from_text(plan_to_json_text(r)), plan_from_text(plan_to_yaml(r))}) {
    expect_same_plan(back, r);
    EXPECT_EQ(back.choices[1].ssd_bytes, 6400000u);
    EXPECT_EQ(back.candidates[static_cast<size_t>(back.choices[1].candidate)].ssd_bytes, 6400000u);
    EXPECT_EQ(back.host_budget_bytes, 200000u);
    EXPECT_EQ(back.ssd_budget_bytes, uint64_t{1} << 40);
    EXPECT_EQ(back.plan_ssd_bytes, 6400000u);
  }
  // No limit is null, and reads back as none.
  r.host_budget_bytes = r.ssd_budget_bytes = 0;
  const auto unlimited = nlohmann::json::parse(plan_to_json_text(r));
  EXPECT_TRUE(unlimited["host_budget_bytes"].is_null());
  EXPECT_EQ(plan_from_text(plan_to_json_text(r)).host_budget_bytes, 0u);
  // Older plans: none of the keys.
  auto old = plan_to_json(sample_plan());
  old.erase("host_budget_bytes");
  old.erase("ssd_budget_bytes");
  old["plan"].erase("ssd_bytes");
  for (auto& t : old["tables"]) {
    t.erase("tier");
    t.erase("ssd_bytes");
  }
  const TuneResult before = plan_from_json(old);
  EXPECT_EQ(before.plan_ssd_bytes, 0u);
  EXPECT_EQ(before.ssd_budget_bytes, 0u);
  for (const auto& ch : before.choices) EXPECT_EQ(ch.ssd_bytes, 0u);
}

TEST(PlanImport, AnSsdChoiceIsCheckedLikeTheOthers) {
  TuneResult r = sample_plan();
  TuneCandidate s = cand(hostile_names()[1], "ssd", "fp32",
                         R"({"device_cache_rows":100,"host_cache_rows":2000,"device_hit_rate":0.5,"host_hit_rate":0.3})", 9000,
                         128000, 55, 0);
  r.candidates.push_back(s);
  r.choices[1] = {hostile_names()[1], 4, "", 9000, 128000, 55, "ssd", "", {}};
  const auto good = plan_to_json(r);
  auto expect_refused = [&](auto change, const std::string& says) {
    auto j = good;
    change(j["tables"][1]);
    try {
      plan_from_json(j);
      ADD_FAILURE() << "accepted: " << says;
    } catch (const PlanError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  };
  EXPECT_NO_THROW(plan_from_json(good));
  expect_refused([](auto& t) { t["tier"] = "device"; }, "\"tier\" is not \"ssd\"");
  expect_refused([](auto& t) { t["params"]["host_cache_rows"] = 200000; }, "larger than the table's 100000 rows");
  expect_refused([](auto& t) { t["params"]["host_hit_rate"] = 0.6; }, "more than 1");
  expect_refused([](auto& t) { t["params"].erase("device_cache_rows"); }, "no \"device_cache_rows\"");
  expect_refused([](auto& t) { t["params"]["cache_policy"] = "lfu"; }, "not \"lru\"");
  expect_refused([](auto& t) { t["params"]["slots"] = 4; }, "not one a ssd choice has");
  expect_refused([](auto& t) { t["spec"] = "pq:m=2"; }, "not a row format");
  expect_refused([](auto& t) { t["ssd_bytes"] = -1; }, "ssd_bytes");
}

TEST(PlanImport, PythonReadsTheYamlAsTheSameDocumentAsTheJson) {
  if (std::string(EDO_PYTHON).empty()) GTEST_SKIP() << "no python3";
  if (!run(std::string(EDO_PYTHON) + " -c 'import yaml; print(1)' 2>/dev/null").size()) GTEST_SKIP() << "no PyYAML";
  const TuneResult r = sample_plan();
  const std::string y = temp_file("plan.yaml", plan_to_yaml(r)), js = temp_file("plan.json", plan_to_json_text(r));
  const std::string same = run(std::string(EDO_PYTHON) + " -c 'import json, sys, yaml; a = yaml.safe_load(open(sys.argv[1], encoding=\"utf-8\")); "
                               "b = json.load(open(sys.argv[2], encoding=\"utf-8\")); print(a == b)' " + y + " " + js);
  EXPECT_EQ(same, "True\n");
}

// What check_torchrec_plan.py reads from a TorchRec plan file under the fake torchrec (a JSON
// object; discarded, with the output shown, when the file does not run).
nlohmann::json check_torchrec_file(const std::string& path) {
  const std::string out = run(std::string(EDO_PYTHON) + " " + std::string(EDO_FAKE_TORCHREC) + "/../check_torchrec_plan.py " + path +
                              " " + EDO_FAKE_TORCHREC + " 2>&1");
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << out;
  return j;
}

TEST(PlanTorchRec, NamesAreStringLiteralsAndTheConstraintsReadBack) {
  if (std::string(EDO_PYTHON).empty()) GTEST_SKIP() << "no python3";
  const TuneResult r = sample_plan();
  const std::string py = plan_to_torchrec(r);
  EXPECT_EQ(py.find('\x1b'), std::string::npos);  // names are escaped, even inside literals
  const std::string path = temp_file("plan.py", py);
  std::filesystem::remove("/tmp/pwned");
  const nlohmann::json j = check_torchrec_file(path);
  EXPECT_FALSE(std::filesystem::exists("/tmp/pwned"));
  ASSERT_FALSE(j.is_discarded());
  // Parsed as Python, the file holds only the expected names and calls: every recorded name
  // stayed inside a string literal.
  EXPECT_EQ(j["audit"], nlohmann::json::array()) << j["audit"].dump();
  const auto& n = hostile_names();
  EXPECT_EQ(j["edo_plan"]["device"], r.device);
  EXPECT_EQ(j["edo_plan"]["feasible"], true);
  // Training table (adam): FUSED; inference tables: QUANT; offload: *_UVM_CACHING + LRU.
  EXPECT_EQ(j["constraints"][n[0]]["compute_kernels"], nlohmann::json::array({"fused"}));
  EXPECT_EQ(j["data_types"][n[0]], "FP32");
  EXPECT_EQ(j["constraints"][n[1]]["compute_kernels"], nlohmann::json::array({"quant"}));
  EXPECT_EQ(j["data_types"][n[1]], "INT8");
  EXPECT_EQ(j["constraints"][n[2]]["compute_kernels"], nlohmann::json::array({"quant_uvm_caching"}));
  EXPECT_EQ(j["constraints"][n[2]]["algorithm"], "LRU");
  EXPECT_NEAR(j["constraints"][n[2]]["load_factor"].get<double>(), 0.05, 1e-9);
  // FBGEMM's layout for that offload (100000 x 16 fp32 rows, 5000 cached): 157 sets of 32 slots,
  // 16 x 4 bytes + 16 bytes of state a slot, 4 bytes a table row (cache_index_table_map has one
  // entry per cached row, CacheState.construct) and 44 bytes of small buffers (cumsum 16, miss
  // counter 16, stats stubs 8 + 4). This hand-built plan's offload counted 720000 bytes.
  EXPECT_EQ(j["fbgemm_offload_device_bytes"][n[2]], 157u * 32 * (16 * 4 + 16) + 4 * 100000 + 44);
  EXPECT_EQ(j["edo_plan"]["fbgemm_plan_device_bytes"], r.plan_device_bytes + (157u * 32 * 80 + 400044) - 720000);
  EXPECT_EQ(j["edo_only"][n[3]], "pq:m=2");
  EXPECT_FALSE(j["constraints"].contains(n[3]));
  EXPECT_EQ(j["shared_with"][n[4]], n[0]);
  EXPECT_FALSE(j["constraints"].contains(n[5]));  // not tuned
}

// The TorchRec file of a plan, read back by check_torchrec_plan.py under the fake torchrec.
nlohmann::json read_torchrec(const TuneResult& r, const std::string& file) {
  return check_torchrec_file(temp_file(file, plan_to_torchrec(r)));
}

// A feasible CPU plan of 1000 x 16 tables, each {module path, optimizer ("" = none recorded),
// recorded dtype, strategy, params, training (gradients recorded; an optimizer implies it)}.
struct TorchRecRow {
  std::string name, optimizer, dtype, strategy, params;
  bool training = false;
};
TuneResult torchrec_rows_plan(const std::vector<TorchRecRow>& rows) {
  TuneResult r;
  r.backend = "cpu";
  r.device = "cpu";
  r.weights = "recorded";
  r.feasible = true;
  for (const auto& row : rows) {
    TuneTable t;
    t.name = row.name;
    t.rows = 1000;
    t.dim = 16;
    t.dtype = row.dtype;
    t.optimizer = row.optimizer;
    t.training = row.training || !row.optimizer.empty();
    t.tuned = true;
    r.tables.push_back(t);
    r.candidates.push_back(cand(row.name, row.strategy, row.strategy, row.params, 1, 0, 1, 0));
    r.choices.push_back({row.name, static_cast<int64_t>(r.candidates.size() - 1), "", 1, 0, 1, "why", "", {}});
  }
  return r;
}
nlohmann::json torchrec_readback(const std::vector<TorchRecRow>& rows, const std::string& file) {
  return read_torchrec(torchrec_rows_plan(rows), file);
}

// Issue 20 section 1: the TorchRec file keys by config name (what TorchRec's planner looks up),
// writes only kernel/data-type pairs FBGEMM has, names the optimizer change in fused_params,
// and turns on stochastic rounding for fp16 training.
TEST(PlanTorchRec, ConfigNamesFbgemmPairsAndTheOptimizer) {
  if (std::string(EDO_PYTHON).empty()) GTEST_SKIP() << "no python3";
  TuneResult r;
  r.backend = "cpu";
  r.device = "cpu";
  r.weights = "recorded";
  r.feasible = true;
  auto add = [&](const std::string& name, const std::string& opt, const std::string& strategy, const std::string& params,
                 const std::string& optimizer) {
    TuneTable t;
    t.name = name;
    t.rows = 1000;
    t.dim = 16;
    t.dtype = "fp32";
    t.optimizer = opt;
    t.training = !opt.empty();  // as the tuner records a table with optimizer state
    t.tuned = true;
    r.tables.push_back(t);
    TuneCandidate c = cand(name, strategy, strategy == "offload" ? "offload:cache=0.1:policy=lru" : strategy, params, 1, 0, 1, 0);
    c.optimizer = optimizer;
    r.candidates.push_back(c);
    r.choices.push_back({name, static_cast<int64_t>(r.candidates.size() - 1), "", 1, 0, 1, "why", "", {}});
  };
  add("model.sparse_arch.embedding_bag_collection.embedding_bags.t_user", "adam", "fp16", "{}", "rowwise_adagrad");
  add("model.sparse_arch.embedding_bag_collection.embedding_bags.t_item", "adam", "int8", "{}", "");
  add("model.ec.embeddings.t_query", "", "bf16", "{}", "");
  add("model.ec.embeddings.t_ad", "", "int4", "{}", "");
  add("model.ec.embeddings.t_hot", "", "offload", R"({"cache_rows":100,"policy":"static"})", "");
  add("a.embedding_bags.t_dup", "", "int8", "{}", "");
  add("b.embedding_bags.t_dup", "", "int8", "{}", "");
  add("model.sparse_arch.embedding_bag_collection.embedding_bags.t_geo", "adam", "fp32", "{}", "");  // kept, trains
  const nlohmann::json j = read_torchrec(r, "config_names.py");
  // The optimizer change is said whole: which tables the plan moves to row-wise Adagrad, and
  // every training table the sharder's fused_params reach (t_geo too, which the plan keeps).
  EXPECT_EQ(j["rowwise_adagrad_tables"], nlohmann::json::array({"t_user"}));
  EXPECT_EQ(j["fused_params_reaches"], nlohmann::json::array({"t_user", "t_geo"}));
  EXPECT_NE(plan_to_torchrec(r).find("# 1 of them are not in rowwise_adagrad_tables"), std::string::npos);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["audit"], nlohmann::json::array()) << j["audit"].dump();
  EXPECT_EQ(j["constraints"]["t_user"]["compute_kernels"], nlohmann::json::array({"fused"}));
  EXPECT_EQ(j["data_types"]["t_user"], "FP16");
  EXPECT_EQ(j["constraints"]["t_user"]["stochastic_rounding"], true);
  EXPECT_EQ(j["fused_params"]["optimizer"], "EXACT_ROWWISE_ADAGRAD");
  EXPECT_EQ(j["module_paths"]["t_user"], "model.sparse_arch.embedding_bag_collection.embedding_bags.t_user");
  // Training int8, bf16 anywhere, a static hot set: no FBGEMM kernel, listed with the reason.
  EXPECT_FALSE(j["constraints"].contains("t_item"));
  EXPECT_NE(j["edo_only_why"]["t_item"].get<std::string>().find("inference-only"), std::string::npos);
  EXPECT_FALSE(j["data_types"].contains("t_query"));
  EXPECT_NE(j["edo_only_why"]["t_query"].get<std::string>().find("BF16"), std::string::npos);
  EXPECT_EQ(j["constraints"]["t_ad"]["compute_kernels"], nlohmann::json::array({"quant"}));
  EXPECT_EQ(j["data_types"]["t_ad"], "INT4");
  EXPECT_TRUE(j["edo_only"].contains("t_hot"));
  // One config name in two collections: both keep their paths.
  EXPECT_TRUE(j["data_types"].contains("a.embedding_bags.t_dup"));
  EXPECT_TRUE(j["data_types"].contains("b.embedding_bags.t_dup"));
  EXPECT_FALSE(j["data_types"].contains("t_dup"));
}


// A table trained with plain SGD has gradients but no optimizer state: TorchRec must train it
// (FUSED, a trainable data type), never serve it (QUANT). The `ad` table of examples/dlrm_like.py
// was exported as QUANT before TuneTable::training.
TEST(PlanTorchRec, ATableTrainedWithPlainSgdIsATrainingTable) {
  if (std::string(EDO_PYTHON).empty()) GTEST_SKIP() << "no python3";
  // No optimizer state recorded for any of them.
  const TuneResult r = torchrec_rows_plan({{"ebc.embedding_bags.t_sgd", "", "fp32", "fp32", "{}", true},
                                           {"ebc.embedding_bags.t_sgd_int8", "", "fp32", "int8", "{}", true},
                                           {"ebc.embedding_bags.t_served", "", "fp32", "fp32", "{}", false}});
  const nlohmann::json j = read_torchrec(r, "plain_sgd.py");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["constraints"]["t_sgd"]["compute_kernels"], nlohmann::json::array({"fused"}));
  EXPECT_EQ(j["data_types"]["t_sgd"], "FP32");
  EXPECT_FALSE(j["constraints"].contains("t_sgd_int8")) << "int8 has no training kernel";
  EXPECT_NE(j["edo_only_why"]["t_sgd_int8"].get<std::string>().find("inference-only"), std::string::npos);
  EXPECT_EQ(j["constraints"]["t_served"]["compute_kernels"], nlohmann::json::array({"quant"}));

  // The plan file keeps the word; a plan written before it was takes the recorded optimizer.
  const TuneResult back = plan_from_text(plan_to_json_text(r));
  ASSERT_EQ(back.tables.size(), 3u);
  EXPECT_TRUE(back.tables[0].training);
  EXPECT_TRUE(back.tables[0].optimizer.empty());
  EXPECT_FALSE(back.tables[2].training);
  nlohmann::json old = nlohmann::json::parse(plan_to_json_text(r));
  for (auto& t : old["tables"]) {
    t.erase("training");
    t["recorded_optimizer"] = t["name"] == "ebc.embedding_bags.t_sgd" ? "adam" : "";
  }
  const TuneResult before = plan_from_text(old.dump());
  EXPECT_TRUE(before.tables[0].training);
  EXPECT_FALSE(before.tables[1].training);
}

// Issue 20 section 1, "for inference num_embeddings_post_pruning": an inference table pruned to
// its read rows is exported where TorchRec reads the count (BaseEmbeddingConfig's
// num_embeddings_post_pruning, keyed by config name) with a QUANT kernel in its recorded row
// format; a training table's pruning stays edo-only (TorchRec prunes at inference only).
TEST(PlanTorchRec, InferencePruningIsNumEmbeddingsPostPruning) {
  if (std::string(EDO_PYTHON).empty()) GTEST_SKIP() << "no python3";
  const nlohmann::json j = torchrec_readback({{"m.ebc.embedding_bags.t_served", "", "fp32", "pruned", R"({"kept_rows":412,"held_out_lost_fraction":0.01})"},
                                              {"m.ebc.embedding_bags.t_half", "", "fp16", "pruned", R"({"kept_rows":7})"},
                                              {"m.ebc.embedding_bags.t_trained", "adagrad", "fp32", "pruned", R"({"kept_rows":412})"}},
                                             "pruning.py");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["audit"], nlohmann::json::array()) << j["audit"].dump();
  EXPECT_EQ(j["num_embeddings_post_pruning"], nlohmann::json({{"t_served", 412}, {"t_half", 7}}));
  EXPECT_EQ(j["constraints"]["t_served"]["compute_kernels"], nlohmann::json::array({"quant"}));
  EXPECT_EQ(j["data_types"]["t_served"], "FP32");
  EXPECT_EQ(j["data_types"]["t_half"], "FP16");
  EXPECT_FALSE(j["edo_only"].contains("t_served"));
  // Training pruning: edo-only, with the reason.
  EXPECT_EQ(j["edo_only"]["t_trained"], "pruned");
  EXPECT_FALSE(j["data_types"].contains("t_trained"));
  EXPECT_NE(j["edo_only_why"]["t_trained"].get<std::string>().find("inference only"), std::string::npos);
}

// Issue 20 section 1, "for inference ... FP8": TorchRec's DataType (a48cef79) has NFP8 but no FP8,
// and FBGEMM's inference kernel has no NFP8 rows, so fp8 stays edo-only in both modes with a
// reason naming the missing member.
TEST(PlanTorchRec, Fp8NamesTheMissingDataType) {
  if (std::string(EDO_PYTHON).empty()) GTEST_SKIP() << "no python3";
  const nlohmann::json j = torchrec_readback({{"m.ebc.embedding_bags.t_fp8", "", "fp32", "fp8", R"({"scale":"row"})"},
                                              {"m.ebc.embedding_bags.t_fp8_train", "adagrad", "fp32", "fp8", R"({"scale":"row"})"}},
                                             "fp8.py");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["audit"], nlohmann::json::array()) << j["audit"].dump();
  for (const char* t : {"t_fp8", "t_fp8_train"}) {
    EXPECT_EQ(j["edo_only"][t], "fp8") << t;
    EXPECT_FALSE(j["data_types"].contains(t)) << t;
    EXPECT_FALSE(j["constraints"].contains(t)) << t;
    EXPECT_NE(j["edo_only_why"][t].get<std::string>().find("DataType has no FP8 member"), std::string::npos) << t;
  }
  EXPECT_NE(j["edo_only_why"]["t_fp8"].get<std::string>().find("SparseType.NFP8"), std::string::npos);
}

// Issue 35 point 3: a table on the ssd tier is TorchRec's KEY_VALUE kernel with the L1 and L2
// edo replayed, rounded up (tuner/src/io/torchrec_key_value.h). TorchRec's SSD TBE then caches
// min(int(MB x 2^20 / 32 / element bytes / dim), int(0.2 x rows / 32)) sets of 32 rows. By hand,
// 10^7-row tables (0.2 of them: 62500 sets):
//  t_ssd (fp32, dim 64, 8192 B a set): 5000 device rows -> 157 sets = 1286144 B -> 2 MB -> 256
//    sets = 8192 rows; 4194304 host rows x (256 + 8 + 32) B = 1241513984 B -> 2 GB (the rows
//    alone are exactly 1 GiB: CacheLib's id and item header push them over).
//  t_exact (fp32, dim 64): 4096 device rows = 128 sets = exactly 1 MB -> 1 MB, 4096 rows; no
//    host rows -> l2_cache_size 0.
//  t_over (fp32, dim 64): 4097 device rows -> 129 sets = 1056768 B -> 2 MB -> 8192 rows.
//  t_half (fp16, dim 128, 8192 B a set): 32 device rows -> 1 set -> 1 MB -> 128 sets = 4096
//    rows; 10^7 host rows x (256 + 40) B = 2960000000 B = 2.76 GiB -> 3 GB; FP16 rows train with
//    stochastic rounding.
//  t_wide (fp32, dim 64): 2000001 device rows -> 62501 sets, one more than TorchRec builds.
//  t_spec16 (an fp32 table whose ssd choice's spec is fp16): FP16 rows, 4096 B a set -> 1 MB,
//    256 sets.
// Inference, bf16 rows, int8 rows (t_spec8), params without the cache rows and t_wide stay
// edo-only, with the reason; the inference table's sizes are still in key_value_tables.
TEST(PlanTorchRec, SsdTablesAreKeyValueKernelsSizedFromTheReplay) {
  if (std::string(EDO_PYTHON).empty()) GTEST_SKIP() << "no python3";
  TuneResult r = torchrec_rows_plan({
      {"m.ebc.embedding_bags.t_ssd", "adagrad", "fp32", "ssd",
       R"({"device_cache_rows":5000,"host_cache_rows":4194304,"device_hit_rate":0.61,"host_hit_rate":0.25,"ssd_reads_per_step":14.5})"},
      {"m.ebc.embedding_bags.t_exact", "adagrad", "fp32", "ssd",
       R"({"device_cache_rows":4096,"host_cache_rows":0,"optimizer_why":"trained with adagrad as recorded","writebacks_per_step":9.5})"},
      {"m.ebc.embedding_bags.t_over", "adagrad", "fp32", "ssd", R"({"device_cache_rows":4097,"host_cache_rows":0})"},
      {"m.ebc.embedding_bags.t_half", "adagrad", "fp16", "ssd", R"({"device_cache_rows":32,"host_cache_rows":10000000})"},
      {"m.ebc.embedding_bags.t_served", "", "fp32", "ssd", R"({"device_cache_rows":32,"host_cache_rows":64})"},
      {"m.ebc.embedding_bags.t_bf16", "adagrad", "bf16", "ssd", R"({"device_cache_rows":32,"host_cache_rows":64})"},
      {"m.ebc.embedding_bags.t_bare", "adagrad", "fp32", "ssd", "{}"},
      {"m.ebc.embedding_bags.t_wide", "adagrad", "fp32", "ssd", R"({"device_cache_rows":2000001,"host_cache_rows":0})"},
      {"m.ebc.embedding_bags.t_spec16", "adagrad", "fp32", "ssd", R"({"device_cache_rows":32,"host_cache_rows":0})"},
      {"m.ebc.embedding_bags.t_spec8", "adagrad", "fp32", "ssd", R"({"device_cache_rows":32,"host_cache_rows":0})"}});
  r.candidates[r.candidates.size() - 2].spec = "fp16";  // the row format of an ssd choice, when it names one
  r.candidates[r.candidates.size() - 1].spec = "int8";
  for (auto& t : r.tables) {
    t.rows = 10000000;
    t.dim = t.dtype == "fp16" ? 128 : 64;
  }
  // The JSON and YAML plans carry the same KeyValueParams (null where TorchRec's SSD TBE cannot
  // hold the rows or the params have no sizes).
  const auto doc = plan_to_json(r);
  const auto kv_of = [&](const std::string& table) {
    for (const auto& t : doc["tables"])
      if (t["name"] == "m.ebc.embedding_bags." + table) return nlohmann::json::parse(t["key_value_params"].dump());
    return nlohmann::json("absent");
  };
  EXPECT_EQ(kv_of("t_ssd"), nlohmann::json({{"max_l1_cache_size", 2}, {"l2_cache_size", 2}, {"l1_rows", 8192}}));
  EXPECT_EQ(kv_of("t_half"), nlohmann::json({{"max_l1_cache_size", 1}, {"l2_cache_size", 3}, {"l1_rows", 4096}}));
  EXPECT_EQ(kv_of("t_served"), nlohmann::json({{"max_l1_cache_size", 1}, {"l2_cache_size", 1}, {"l1_rows", 4096}}));
  for (const char* t : {"t_bf16", "t_bare", "t_wide", "t_spec8"}) EXPECT_EQ(kv_of(t), nullptr) << t;
  EXPECT_NE(plan_to_yaml(r).find("\"key_value_params\":\n      \"max_l1_cache_size\": 2\n      \"l2_cache_size\": 2\n      \"l1_rows\": 8192"),
            std::string::npos);
  const nlohmann::json j = read_torchrec(r, "ssd.py");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["audit"], nlohmann::json::array()) << j["audit"].dump();
  const std::map<std::string, std::array<uint64_t, 3>> expected{  // l1 rows, MB, GB
      {"t_ssd", {8192, 2, 2}}, {"t_exact", {4096, 1, 0}}, {"t_over", {8192, 2, 0}}, {"t_half", {4096, 1, 3}},
      {"t_spec16", {8192, 1, 0}}};  // fp16 rows of dim 64: a set is 4096 B, 1 MB holds 256 sets
  for (const auto& [t, e] : expected) {
    const auto& c = j["constraints"][t];
    EXPECT_EQ(c["compute_kernels"], nlohmann::json::array({"key_value"})) << t;
    EXPECT_EQ(c["key_value_params"]["is_key_value_params"], true) << t;
    EXPECT_EQ(c["key_value_params"]["max_l1_cache_size"], e[1]) << t;
    EXPECT_EQ(c["key_value_params"]["l2_cache_size"], e[2]) << t;
    EXPECT_EQ(c["key_value_params"]["ssd_storage_directory"], nullptr) << t;  // the user's disk
    EXPECT_EQ(c["load_factor"], nullptr) << t;  // no CacheParams: its load factor would not reach the TBE
    EXPECT_EQ(j["key_value_tables"][t]["l1_rows"], e[0]) << t;
    EXPECT_EQ(j["key_value_tables"][t]["max_l1_cache_size_mb"], e[1]) << t;
    EXPECT_EQ(j["key_value_tables"][t]["l2_cache_size_gb"], e[2]) << t;
    EXPECT_EQ(j["key_value_tables"][t]["in_constraints"], true) << t;
    EXPECT_FALSE(j["edo_only"].contains(t)) << t;
  }
  // An inference table: its sizes for serving it unquantized, no constraint (32 fp32 rows of dim
  // 64 -> 1 set -> 1 MB -> 128 sets; 64 host rows -> 1 GB).
  EXPECT_EQ(j["key_value_tables"]["t_served"]["in_constraints"], false);
  EXPECT_EQ(j["key_value_tables"]["t_served"]["l1_rows"], 4096);
  EXPECT_EQ(j["key_value_tables"]["t_served"]["l2_cache_size_gb"], 1);
  EXPECT_EQ(j["key_value_tables"]["t_ssd"]["replayed"],
            nlohmann::json({{"device_hit_rate", 0.61}, {"host_hit_rate", 0.25}, {"ssd_reads_per_step", 14.5}}));
  EXPECT_EQ(j["data_types"]["t_ssd"], "FP32");
  EXPECT_EQ(j["data_types"]["t_half"], "FP16");
  EXPECT_EQ(j["constraints"]["t_half"]["stochastic_rounding"], true);
  EXPECT_EQ(j["data_types"]["t_spec16"], "FP16");
  const std::map<std::string, std::string> why{{"t_served", "inference (quant) sharders have no key-value kernel"},
                                               {"t_bf16", "FBGEMM has no BF16 weights"},
                                               {"t_bare", "no device_cache_rows and host_cache_rows"},
                                               {"t_wide", "caps the device cache at 0.2 of the rows"},
                                               {"t_spec8", "inference-only in FBGEMM"}};
  for (const auto& [t, w] : why) {
    EXPECT_EQ(j["edo_only"][t], t == "t_spec8" ? "ssd (int8 rows)" : "ssd") << t;
    EXPECT_FALSE(j["constraints"].contains(t)) << t;
    EXPECT_EQ(j["key_value_tables"].contains(t), t == "t_served") << t;
    EXPECT_NE(j["edo_only_why"][t].get<std::string>().find(w), std::string::npos) << t << ": " << j["edo_only_why"][t];
  }
  // A trained KEY_VALUE table trains with row-wise Adagrad (FBGEMM's SSD TBE: ssd_candidates.h):
  // named in its entry (with the candidate's why), in rowwise_adagrad_tables and fused_params.
  EXPECT_EQ(j["key_value_tables"]["t_ssd"]["optimizer"], "EXACT_ROWWISE_ADAGRAD");
  EXPECT_FALSE(j["key_value_tables"]["t_ssd"].contains("optimizer_why"));
  EXPECT_EQ(j["key_value_tables"]["t_exact"]["optimizer_why"], "trained with adagrad as recorded");
  EXPECT_EQ(j["key_value_tables"]["t_exact"]["replayed"], nlohmann::json({{"writebacks_per_step", 9.5}}));
  EXPECT_FALSE(j["key_value_tables"]["t_served"].contains("optimizer"));
  EXPECT_EQ(j["fused_params"], nlohmann::json({{"optimizer", "EXACT_ROWWISE_ADAGRAD"}}));
  const auto& rowwise = j["rowwise_adagrad_tables"];
  for (const char* t : {"t_ssd", "t_exact", "t_over", "t_half", "t_spec16"})
    EXPECT_NE(std::find(rowwise.begin(), rowwise.end(), t), rowwise.end()) << t;
  EXPECT_EQ(std::find(rowwise.begin(), rowwise.end(), "t_served"), rowwise.end());
}

TEST(PlanTorchRec, PythonStringQuotesEveryCodePoint) {
  if (std::string(EDO_PYTHON).empty()) GTEST_SKIP() << "no python3";
  std::string lits = "[";
  for (const auto& s : hostile_names()) lits += python_string(s) + ",";
  lits += "]";
  for (char c : lits) ASSERT_TRUE(c == '\t' || (c >= 0x20 && c < 0x7F)) << "only printable ASCII in the literal";
  const std::string path = temp_file("names.py", "import json\nprint(json.dumps(" + lits + "))\n");
  const auto back = nlohmann::json::parse(run(std::string(EDO_PYTHON) + " " + path));
  ASSERT_EQ(back.size(), hostile_names().size());
  for (size_t i = 0; i < back.size(); ++i) EXPECT_EQ(back[i], hostile_names()[i]) << i;
}

void expect_rejected(const std::string& text, const std::string& needle) {
  try {
    plan_from_text(text);
    ADD_FAILURE() << "accepted: " << text.substr(0, 200);
  } catch (const PlanError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << "wanted '" << needle << "' in: " << what;
  }
}

TEST(PlanImport, MalformedPlansAreOneLineErrors) {
  const auto good = plan_to_json(sample_plan());
  auto with = [&](auto edit) {
    auto j = good;
    edit(j);
    return j.dump();
  };
  expect_rejected("", "empty");
  expect_rejected("{", "JSON");
  expect_rejected("[1, 2]", "not an object");
  expect_rejected("just text", "not an object");
  expect_rejected(with([](auto& j) { j["schema"] = "edo.plan/2"; }), "edo.plan/2");
  expect_rejected(with([](auto& j) { j.erase("budget_bytes"); }), "budget_bytes");
  expect_rejected(with([](auto& j) { j["budget_bytes"] = -5; }), "budget_bytes");
  expect_rejected(with([](auto& j) { j["budget_bytes"] = 1.5; }), "budget_bytes");
  expect_rejected(with([](auto& j) { j["backend"] = "tpu"; }), "tpu");
  expect_rejected(with([](auto& j) { j["tables"][1]["name"] = j["tables"][0]["name"]; }), "twice");
  expect_rejected(with([](auto& j) { j["tables"][0]["step_us"] = "fast"; }), "step_us");
  expect_rejected(with([](auto& j) { j["tables"][2]["hit_rate"] = 1.5; }), "hit_rate");
  expect_rejected(with([](auto& j) { j["tables"][4]["params"]["with"] = "nobody"; }), "does not list");
  expect_rejected(with([](auto& j) { j["frontier"] = nlohmann::ordered_json::array({nlohmann::ordered_json::array({1})}); }), "frontier");
  expect_rejected(with([](auto& j) { j["plan"] = nullptr; }), "disagrees");
  expect_rejected(std::string(100000, '[') + std::string(100000, ']'), "nested");
  expect_rejected("{\"a\":" + std::string(5000, '[') + std::string(5000, ']') + "}", "nested");
  expect_rejected("a:\n" + std::string(2000, ' ') + "b: 1\n", "indented");
  // A YAML alias bomb expands to far more values than any plan has.
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i)
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) +
            ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" +
            std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) +
            ", *a" + std::to_string(i - 1) + "]\n";
  expect_rejected(bomb, "values");
  expect_rejected("schema: [unclosed\n", "YAML");
}

// Issue 20 section 4: a plan from outside holds only the documented choices. Before, any
// strategy string was accepted (and the table moved to the TorchRec file's edo_only with the
// string), and params were never looked at: a cache_rows of "lots" or 1e308 went through.
TEST(PlanImport, OnlyTheDocumentedStrategiesAndParamsAreAccepted) {
  const auto good = plan_to_json(sample_plan());
  EXPECT_NO_THROW(plan_from_json(good));
  auto with = [&](auto edit) {
    auto j = good;
    edit(j);
    return j.dump();
  };
  using oj = nlohmann::ordered_json;
  expect_rejected(with([](auto& j) { j["tables"][1]["strategy"] = "int8\"); import os #"; }), "not one of edo's");
  expect_rejected(with([](auto& j) { j["tables"][1]["strategy"] = "turbo"; }), "not one of edo's");
  expect_rejected(with([](auto& j) { j["tables"][1]["spec"] = "int4"; }), "spec");
  expect_rejected(with([](auto& j) { j["tables"][1]["spec"] = "nonsense:x"; }), "spec");
  expect_rejected(with([](auto& j) { j["tables"][1]["optimizer"] = "sgd; rm -rf"; }), "optimizer");
  expect_rejected(with([](auto& j) { j["tables"][2]["params"]["cache_rows"] = "lots"; }), "cache_rows");
  expect_rejected(with([](auto& j) { j["tables"][2]["params"]["cache_rows"] = 1e308; }), "cache_rows");
  expect_rejected(with([](auto& j) { j["tables"][2]["params"]["cache_rows"] = -1; }), "cache_rows");
  expect_rejected(with([](auto& j) { j["tables"][2]["params"]["cache_rows"] = 12.5; }), "cache_rows");
  expect_rejected(with([](auto& j) { j["tables"][2]["params"]["cache_rows"] = 200000; }), "larger than the table");
  expect_rejected(with([](auto& j) { j["tables"][2]["params"].erase("cache_rows"); }), "cache_rows");
  expect_rejected(with([](auto& j) { j["tables"][2]["params"]["policy"] = "lfu"; }), "policy");
  expect_rejected(with([](auto& j) { j["tables"][2]["params"]["exec"] = "code"; }), "exec");
  // What edo tune says about a figure (issue 19): an offload cache's held-out replay or why its
  // hit rate is an estimate, and a pruned table's held-out loss, read back; malformed, refused.
  EXPECT_NO_THROW(plan_from_json(nlohmann::ordered_json::parse(with([](auto& j) {
    j["tables"][2]["params"]["heldout"] = {{"fit_fraction", 0.7}, {"sample_rate", 1}, {"heldout_sampled_refs", 3000}};
    j["tables"][2]["params"]["hit_rate_estimated"] = "recording has no ordered sample";
  }))));
  expect_rejected(with([](auto& j) { j["tables"][2]["params"]["heldout"] = {{"sample_rate", "x"}}; }), "heldout");
  expect_rejected(with([](auto& j) { j["tables"][2]["params"]["heldout"] = 3; }), "heldout");
  expect_rejected(with([](auto& j) { j["tables"][2]["params"]["hit_rate_estimated"] = 1; }), "hit_rate_estimated");
  EXPECT_NO_THROW(plan_from_json(nlohmann::ordered_json::parse(with([](auto& j) {
    j["tables"][1]["strategy"] = "pruned";
    j["tables"][1]["spec"] = "pruned";
    j["tables"][1]["params"] = {{"kept_rows", 10}, {"held_out_lost_fraction", 0.25}, {"held_out_lookups", 400}};
  }))));
  expect_rejected(with([](auto& j) {
    j["tables"][1]["strategy"] = "pruned";
    j["tables"][1]["spec"] = "pruned";
    j["tables"][1]["params"] = {{"kept_rows", 10}, {"held_out_lost_fraction", -1}};
  }), "held_out_lost_fraction");
  expect_rejected(with([](auto& j) { j["tables"][3]["params"]["m"] = oj::array({1}); }), "\"m\"");
  expect_rejected(with([](auto& j) { j["tables"][1]["device_bytes"] = -3; }), "device_bytes");
  expect_rejected(with([](auto& j) { j["tables"][1]["host_bytes"] = 1e300; }), "host_bytes");
  // YAML spells non-finite numbers: refused as sizes too.
  std::string yaml = plan_to_yaml(sample_plan());
  const auto at = yaml.find("\"cache_rows\": 5000");
  ASSERT_NE(at, std::string::npos) << yaml;
  expect_rejected(yaml.substr(0, at) + "\"cache_rows\": .inf" + yaml.substr(at + 18), "cache_rows");
  expect_rejected(yaml.substr(0, at) + "\"cache_rows\": .nan" + yaml.substr(at + 18), "cache_rows");
}


// Issue 20 section 1: what the recording knows. The recorded config name wins over the
// module-path rule; feature_names, pooling_factors / num_poolings / batch_sizes per feature, and
// CacheParams.stats (TorchRec's CacheStatistics) from the facts.
TEST(PlanTorchRec, RecordedConfigNamesFeaturesPoolingAndCacheStatistics) {
  if (std::string(EDO_PYTHON).empty()) GTEST_SKIP() << "no python3";
  TuneResult r;
  r.backend = "cpu";
  r.device = "cpu";
  r.weights = "recorded";
  r.feasible = true;
  for (const std::string name : {"sparse.collection.embedding_bags.t0", "sparse.plain_table"}) {
    TuneTable t;
    t.name = name;
    t.rows = 1000;
    t.dim = 16;
    t.dtype = "fp32";
    t.optimizer = "adagrad";
    t.training = true;
    r.tables.push_back(t);
    r.candidates.push_back(cand(name, "offload", "offload:cache=0.1:policy=lru", R"({"cache_rows":100,"policy":"lru"})", 1, 0, 1, 0));
    r.choices.push_back({name, static_cast<int64_t>(r.candidates.size() - 1), "", 1, 0, 1, "why", "", {}});
  }
  TorchRecFacts f;
  f.config = "user_table";  // the config name differs from the path's last part
  f.features = {"user_id", "user_history"};
  f.lookups = 6000;
  f.bags = 1200;
  f.steps = 10;
  f.expected_lookups = 321.5;
  f.miss_curve = {{0.01, 0.8}, {0.1, 0.4}, {0.5, 0.1}, {1.0, 0.0}};
  f.cacheability = 0.25;
  const std::map<std::string, TorchRecFacts> facts{{"sparse.collection.embedding_bags.t0", f}};
  const nlohmann::json j = check_torchrec_file(temp_file("facts.py", plan_to_torchrec(r, facts)));
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["audit"], nlohmann::json::array()) << j["audit"].dump();
  ASSERT_TRUE(j["constraints"].contains("user_table")) << j.dump();
  EXPECT_FALSE(j["constraints"].contains("t0"));
  EXPECT_EQ(j["module_paths"]["user_table"], "sparse.collection.embedding_bags.t0");
  const auto& c = j["constraints"]["user_table"];
  EXPECT_EQ(c["feature_names"], nlohmann::json::array({"user_id", "user_history"}));
  EXPECT_EQ(c["pooling_factors"], nlohmann::json::array({5.0, 5.0}));
  EXPECT_EQ(c["num_poolings"], nlohmann::json::array({1.0, 1.0}));
  EXPECT_EQ(c["batch_sizes"], nlohmann::json::array({60, 60}));  // 1200 bags / 10 steps / 2 features
  EXPECT_EQ(c["compute_kernels"], nlohmann::json::array({"fused_uvm_caching"}));
  EXPECT_DOUBLE_EQ(c["stats"]["expected_lookups"].get<double>(), 321.5);
  EXPECT_DOUBLE_EQ(c["stats"]["cacheability"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(c["stats"]["miss_rate"]["0.0"].get<double>(), 1.0);
  EXPECT_NEAR(c["stats"]["miss_rate"]["0.01"].get<double>(), 0.8, 1e-12);
  EXPECT_NEAR(c["stats"]["miss_rate"]["0.1"].get<double>(), 0.4, 1e-12);
  EXPECT_NEAR(c["stats"]["miss_rate"]["0.5"].get<double>(), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(c["stats"]["miss_rate"]["1.0"].get<double>(), 0.0);
  // No facts: the module path whole, TorchRec's defaults (one pooling factor of 1.0), no stats.
  const auto& p = j["constraints"]["sparse.plain_table"];
  EXPECT_EQ(p["feature_names"], nullptr);
  EXPECT_EQ(p["pooling_factors"], nlohmann::json::array({1.0}));
  EXPECT_EQ(p["batch_sizes"], nullptr);
  EXPECT_FALSE(p.contains("stats"));
}

// Issue 34 point 1: per-feature pooling factors and batch sizes from the hook's KeyedJaggedTensor
// counts; the offload's measured (held-out) miss rate is the curve's value at the exported load
// factor, compulsory misses kept (the curve does not fall to 0 before load factor 1);
// stable_fingerprint() is the same for the same statistics; a plan's cache_policy "lfu" is
// exported as CacheAlgorithm.LFU.
TEST(PlanTorchRec, PerFeatureWorkloadAndTheMeasuredMissRateAtTheLoadFactor) {
  if (std::string(EDO_PYTHON).empty()) GTEST_SKIP() << "no python3";
  TuneResult r;
  r.backend = "cpu";
  r.device = "cpu";
  r.weights = "recorded";
  r.feasible = true;
  const std::string name = "sparse.ebc.embedding_bags.t_user";
  TuneTable t;
  t.name = name;
  t.rows = 1000;
  t.dim = 16;
  t.dtype = "fp32";
  r.tables.push_back(t);
  TuneCandidate c = cand(name, "offload", "offload:cache=0.05:policy=lru", R"({"cache_rows":50,"policy":"lru","cache_policy":"lfu"})", 1, 0, 1, 0);
  c.heldout_hit_rate = 0.37;  // miss 0.63 at load factor 0.05
  r.candidates.push_back(c);
  r.choices.push_back({name, 0, "", 1, 0, 1, "why", "", {}});
  TorchRecFacts f;
  f.config = "t_user";
  f.features = {"user_id", "user_hist"};
  f.lookups = 1400;
  f.bags = 400;
  f.steps = 4;
  f.feature_lookups = {200, 1200};  // 1 and 6 ids a bag
  f.feature_bags = {200, 200};
  f.rows = 1000;
  f.expected_lookups = 350;
  f.distinct_lookups = 120;
  f.miss_curve = {{0.01, 0.9}, {0.1, 0.5}, {0.5, 0.3}};  // 0.3: compulsory misses stay
  f.cacheability = 0.4;
  f.heldout = true;
  const nlohmann::json j = check_torchrec_file(temp_file("per_feature.py", plan_to_torchrec(r, {{name, f}})));
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["audit"], nlohmann::json::array()) << j["audit"].dump();
  const auto& k = j["constraints"]["t_user"];
  EXPECT_EQ(k["pooling_factors"], nlohmann::json::array({1.0, 6.0}));
  EXPECT_EQ(k["batch_sizes"], nlohmann::json::array({50, 50}));  // 200 bags / 4 steps
  EXPECT_EQ(k["algorithm"], "LFU");
  EXPECT_DOUBLE_EQ(k["load_factor"].get<double>(), 0.05);
  const auto& st = k["stats"];
  EXPECT_NEAR(st["at_load_factor"].get<double>(), 0.63, 1e-12);
  EXPECT_NEAR(st["miss_rate"]["0.5"].get<double>(), 0.3, 1e-12);
  EXPECT_DOUBLE_EQ(st["miss_rate"]["1.0"].get<double>(), 0.0);  // no cache at all: TorchRec keeps it in HBM
  EXPECT_DOUBLE_EQ(st["expected_lookups"].get<double>(), 350);
  EXPECT_DOUBLE_EQ(st["distinct_lookups"].get<double>(), 120);
  EXPECT_EQ(st["height"], 1000);
  EXPECT_EQ(st["heldout"], true);
  EXPECT_EQ(st["fingerprint_stable"], true);
  EXPECT_EQ(st["fingerprint_changes"], true);
  // EmbeddingOffloadStats' histogram over 10 bins of 100 rows: the hits a step each bin adds
  // (hand computed: hit 0.5 at 0.1, then 0.55, 0.60, 0.65, 0.70 at 0.5 and no more: the 0.3
  // compulsory misses are in no bin), x 350 lookups a step.
  const auto& hist = st["mrc_hist_counts_10"];
  ASSERT_EQ(hist.size(), 10u);
  const double want[10] = {175, 17.5, 17.5, 17.5, 17.5, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < 10; ++i) EXPECT_NEAR(hist[i].get<double>(), want[i], 1e-9) << i;
  // The point is the plan's: cache_statistics (every recorded table) carries it too.
  EXPECT_NEAR(j["cache_statistics"]["t_user"]["miss_rate"]["0.1"].get<double>(), 0.5, 1e-12);
}

// Che's approximation on a stream it is exact for: uniform reads of N rows have LRU hit rate
// x / N at x cache rows, and L draws hold N (1 - e^(-L/N)) distinct rows on average.
TEST(PlanTorchRec, DistinctInWindowIsCheOnAUniformStream) {
  const double n = 1000;
  std::vector<std::pair<double, double>> hit;
  for (double x : {1.0, 10.0, 50.0, 100.0, 200.0, 500.0, 800.0, 1000.0}) hit.push_back({x, x / n});
  for (double l : {10.0, 100.0, 500.0, 2000.0}) EXPECT_NEAR(distinct_in_window(hit, l, n), n * (1 - std::exp(-l / n)), 0.01 * l) << l;
  EXPECT_LE(distinct_in_window(hit, 1e9, n), n);
  EXPECT_EQ(distinct_in_window(hit, 0, n), 0);
  EXPECT_EQ(distinct_in_window({}, 5, n), 5);  // no curve: every lookup a miss
}

}  // namespace
}  // namespace edo::tuner
