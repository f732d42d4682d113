// Managed-collision sizing end to end (issue 35 points 4 and 5): mch_job.c (an id space of 2^30
// rows and a 2 GiB table) under `edo record`, then `edo tune` with a budget that holds the large
// table and 4 MiB more: the id table gets a "managed collision, N slots" candidate whose
// predicted held-out rates are those of an exact replay of the job's own ids (written by the
// job) through TorchRec's MCH module (tuner/src/replay/mch_replay.h, checked against torchrec itself
// by torch_mch_replay_real); the plan's exports carry it and TorchRec builds the module from
// the TorchRec export.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "mch_replay.h"
#include "run_command.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using edo::testing::run_command;
using json = nlohmann::json;

namespace {

const std::string kEdo = EDO_BIN;
constexpr uint64_t kBudget = (uint64_t{2} << 30) + (uint64_t{4} << 20);  // big's 2 GiB + 4 MiB

struct Recorded {
  std::string dir, db, ids;
};

const Recorded& recording() {
  static const Recorded r = [] {
    Recorded x;
    x.dir = edo::testing::process_temp_dir("edo_mch_cli_");
    x.db = (fs::path(x.dir) / "job.edodb").string();
    x.ids = (fs::path(x.dir) / "ids.bin").string();
    const auto c = run_command(kEdo + " record -o " + x.db + " -- " + MCH_JOB + " " + x.ids);
    EXPECT_EQ(c.exit_code, 0) << c.err;
    return x;
  }();
  return r;
}

const json& tuned() {
  static const json plan = [] {
    const auto r = run_command(kEdo + " tune " + recording().db + " --budget " + std::to_string(kBudget) +
                               " --strategies mch --max-error inf --json");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return json::parse(r.out, nullptr, false);
  }();
  return plan;
}

// The job's ids as it fed them: 50 steps of 1000.
std::vector<std::vector<int64_t>> job_steps() {
  std::ifstream in(recording().ids, std::ios::binary);
  std::vector<std::vector<int64_t>> steps(50, std::vector<int64_t>(1000));
  for (auto& s : steps) in.read(reinterpret_cast<char*>(s.data()), 1000 * sizeof(int64_t));
  EXPECT_TRUE(in.good()) << recording().ids;
  return steps;
}

json table_named(const json& plan, const std::string& name) {
  for (const auto& t : plan["tables"])
    if (t["name"] == name) return t;
  return json();
}

TEST(MchCli, TheIdTableGetsManagedCollisionWithTheRatesOfAnExactReplay) {
  const json& plan = tuned();
  ASSERT_FALSE(plan.is_discarded());
  ASSERT_TRUE(plan["feasible"].get<bool>()) << plan.dump();
  const json ids = table_named(plan, "ids");
  ASSERT_EQ(ids["strategy"], "mch") << ids.dump();
  EXPECT_EQ(ids["spec"], "fp32");
  EXPECT_TRUE(ids["needs_retraining"].get<bool>());
  const json& p = ids["params"];
  const uint64_t n = p["slots"].get<uint64_t>();
  EXPECT_EQ(p["policy"], "distance_lfu");
  EXPECT_EQ(p["eviction_interval"], 1);
  // N rows of 512 bytes, 4 int64 per slot (sorted raw ids, remapped ids, counts, last access),
  // a history of int(1000 x 1 x 1.25) ids with their last access, and two one-element buffers.
  EXPECT_EQ(ids["device_bytes"].get<uint64_t>(), n * 512 + n * 32 + 1250 * 16 + 16) << ids.dump();
  EXPECT_LE(ids["device_bytes"].get<uint64_t>(), uint64_t{4} << 20);
  // The whole stream is sampled (50,000 ids, under the ordered sample's bound): the held-out
  // part is steps 35..49 (70 % of 50,000 lookups is step 35's first), replayed exactly.
  EXPECT_EQ(p["heldout"]["sample_rate"], 1.0);
  EXPECT_EQ(p["heldout"]["heldout_steps"], 15);
  EXPECT_FALSE(p.contains("steps_approximated")) << p.dump();
  edo::tuner::MchConfig c;
  c.slots = n;
  const edo::tuner::MchStats want = edo::tuner::replay_mch(job_steps(), c, 35);
  ASSERT_EQ(want.lookups, 15000u);
  EXPECT_NEAR(ids["heldout_hit_rate"].get<double>(), want.hit_rate(), 0.02) << ids.dump();
  EXPECT_NEAR(p["hit_rate"].get<double>(), want.hit_rate(), 0.02);
  EXPECT_NEAR(p["own_row_rate"].get<double>(), want.trained_row_rate(), 0.02);
  EXPECT_NEAR(p["collision_rate"].get<double>(), double(want.miss_row_reads) / double(want.lookups), 0.02);
  EXPECT_NEAR(p["insert_rate"].get<double>(), want.insert_rate(), 0.02);
  EXPECT_NEAR(p["eviction_rate"].get<double>(), want.eviction_rate(), 0.02);
  EXPECT_NEAR(ids["error"].get<double>(), 1.0 - want.trained_row_rate(), 0.02);
  // Most lookups read their own trained row; the drift's new ids do not.
  EXPECT_GT(want.trained_row_rate(), 0.5);
  EXPECT_LT(want.trained_row_rate(), 1.0);
  EXPECT_NE(ids["why"].get<std::string>().find("managed collision, " + std::to_string(n) + " slots"), std::string::npos) << ids["why"];
  // The large table fits the budget as recorded: kept, and offered no managed collision (its
  // distinct ids fit what the budget leaves it).
  EXPECT_EQ(table_named(plan, "big")["strategy"], "fp32");
}

TEST(MchCli, ExportsCarryTheModuleAndTorchRecBuildsIt) {
  ASSERT_FALSE(tuned().is_discarded());
  const std::string dir = recording().dir;
  for (const std::string f : {"json", "yaml", "torchrec"}) {
    const std::string out = dir + (f == "torchrec" ? "/plan_torchrec.py" : "/plan." + f);
    const auto r = run_command(kEdo + " export " + recording().db + " --format " + f + " -o " + out + " --force");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::ifstream j(dir + "/plan.json");
  const json plan = json::parse(j, nullptr, false);
  const json ids = table_named(plan, "ids");
  ASSERT_EQ(ids["strategy"], "mch") << plan.dump();
  std::ifstream y(dir + "/plan.yaml");
  const std::string yaml((std::istreambuf_iterator<char>(y)), std::istreambuf_iterator<char>());
  EXPECT_NE(yaml.find("\"strategy\": \"mch\""), std::string::npos);
  EXPECT_NE(yaml.find("\"slots\": " + std::to_string(ids["params"]["slots"].get<uint64_t>())), std::string::npos);
  // edo's Python package reads the plan (edo.apply_plan's validator) and keeps the table as it is.
  if (!std::string(EDO_PYTHON3).empty()) {
    const auto r = run_command("PYTHONPATH=" + std::string(EDO_PYTHON_PKG) + " " + EDO_PYTHON3 +
                               " -c \"import sys; from edo.plan._plan_file import load_plan; from edo.plan._apply import _NO_MODULE; "
                               "p = load_plan(sys.argv[1]); print('loaded', 'mch' in _NO_MODULE)\" " + dir + "/plan.json");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("loaded True"), std::string::npos) << r.out << r.err;
  }
  std::ifstream t(dir + "/plan_torchrec.py");
  const std::string py((std::istreambuf_iterator<char>(t)), std::istreambuf_iterator<char>());
  EXPECT_NE(py.find("\"zch_size\": " + std::to_string(ids["params"]["slots"].get<uint64_t>())), std::string::npos) << py;
  const char* env = std::getenv("EDO_TORCHREC_PYTHON");
  const std::string python = env && *env ? env : TORCHREC_PYTHON;
  if (python.empty()) GTEST_SKIP() << "no TorchRec venv (set EDO_TORCHREC_PYTHON): the module was not built from the export";
  // TorchRec builds the module from the export's arguments and runs it on ids of the table's
  // id space.
  const std::string script = dir + "/build_mch.py";
  std::ofstream(script) << "import runpy, sys, torch\n"
                           "from torchrec.modules.mc_modules import MCHManagedCollisionModule, DistanceLFU_EvictionPolicy\n"
                           "from torchrec.sparse.jagged_tensor import JaggedTensor\n"
                           "g = runpy.run_path(sys.argv[1])\n"
                           "m = g['managed_collision']['ids']\n"
                           "assert m['eviction_policy'] == 'DistanceLFU_EvictionPolicy'\n"
                           "mc = MCHManagedCollisionModule(zch_size=m['zch_size'], device=torch.device('cpu'),\n"
                           "    eviction_policy=DistanceLFU_EvictionPolicy(decay_exponent=m['decay_exponent']),\n"
                           "    eviction_interval=m['eviction_interval'], input_hash_size=m['input_hash_size'])\n"
                           "out = mc.remap(mc.profile({'ids': JaggedTensor(values=torch.tensor([5, 7, 5], dtype=torch.int64),\n"
                           "    lengths=torch.tensor([3]))}))\n"
                           "assert int(out['ids'].values().max()) < m['zch_size']\n"
                           "print('built', m['zch_size'])\n";
  const std::string slots = std::to_string(ids["params"]["slots"].get<uint64_t>());
  const auto r = run_command(python + " " + script + " " + dir + "/plan_torchrec.py");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("built " + slots), std::string::npos) << r.out;
  // TorchRec's real planner (inference: the job has no optimizer) places the table the user
  // builds, zch_size rows, under the export's constraints.
  std::ofstream(dir + "/tables.json") << "{\"ids\": {\"rows\": " + slots + ", \"dim\": 128, \"features\": [\"ids\"]}}";
  const auto planned = run_command(python + " " + TORCHREC_PLANNER_CHECK + " " + dir + "/plan_torchrec.py " + dir +
                                   "/tables.json infer 1 80000000000 2>/dev/null");
  ASSERT_EQ(planned.exit_code, 0) << planned.out;
  const json tp = json::parse(planned.out, nullptr, false);
  ASSERT_FALSE(tp.is_discarded()) << planned.out;
  EXPECT_EQ(tp["tables"]["ids"]["compute_kernel"], "quant") << planned.out;
  EXPECT_EQ(tp["tables"]["ids"]["data_type"], "FP32") << planned.out;
}

}  // namespace
