// `edo tune --target-device` and the default target end to end (issue 19 point 5): a GPU job's
// recording tuned here (no GPU) is "modelled for NVIDIA H200", a CPU job's is measured, a GPU
// without a stored profile is measured with a note, bad targets are usage errors naming the
// stored devices, and `edo bench --save-device` stores a profile `edo tune` then models.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_command.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using edo::testing::run_command;
using json = nlohmann::json;

namespace {

const std::string kEdo = EDO_BIN;

std::string dir() {
  static const std::string d = [] {
    const std::string p = edo::testing::process_temp_dir("edo_target_device_");
    fs::create_directories(fs::path(p) / "devices");
    return p;
  }();
  return d;
}

// Commands see only this test's device directory.
std::string edo(const std::string& args) { return "EDO_DEVICE_DIR=" + dir() + "/devices " + kEdo + " " + args; }

std::string synth(const std::string& name, const std::string& gpu) {
  const std::string path = dir() + "/" + name + ".edodb";
  const auto r = run_command(edo("synth -o " + path + " --tables 2 --rows 20000 --dim 32 --zipf 1.2 --lookups 100000 --seed 3" +
                                 (gpu.empty() ? "" : " --gpu '" + gpu + "'")));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return path;
}

const char* kQuick = " --budget 1GiB --strategies fp16,bf16,int8,offload --max-error inf --reps 1";

TEST(TargetDevice, AGpuJobIsModelledForItsStoredGpu) {
  const std::string db = synth("h200", "NVIDIA H200");
  auto r = run_command(edo("tune " + db + kQuick + " --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["timing"]["kind"], "modelled");
  EXPECT_EQ(j["timing"]["device"], "NVIDIA H200");
  EXPECT_NE(r.err.find("times modelled for NVIDIA H200"), std::string::npos) << r.err;
  // The text header says it, and the stored run says it again in `edo report`.
  r = run_command(edo("tune " + db + kQuick));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("modelled for NVIDIA H200"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("measured on:"), std::string::npos) << r.out;
  r = run_command(edo("report " + db));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("times modelled for NVIDIA H200"), std::string::npos) << r.out;
  r = run_command(edo("export " + db + " --format json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["timing"]["kind"], "modelled");
}

TEST(TargetDevice, ACpuJobIsMeasuredOnTheCpu) {
  const std::string db = synth("cpu", "");
  auto r = run_command(edo("tune " + db + kQuick + " --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["timing"]["kind"], "measured");
  EXPECT_EQ(j["timing"]["device"], j["device"]);
}

TEST(TargetDevice, AGpuWithoutAProfileIsMeasuredWithANote) {
  const std::string db = synth("h100", "NVIDIA H100 80GB HBM3");
  auto r = run_command(edo("tune " + db + kQuick + " --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["timing"]["kind"], "measured");
  bool said = false;
  for (const auto& n : j["notes"]) {
    const std::string s = n.get<std::string>();
    said = said || (s.find("NVIDIA H100 80GB HBM3") != std::string::npos && s.find("--target-device") != std::string::npos);
  }
  EXPECT_TRUE(said) << j["notes"].dump();
  // --target-device picks a stored one.
  r = run_command(edo("tune " + db + kQuick + " --json --target-device h200"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["timing"]["device"], "NVIDIA H200");
}

TEST(TargetDevice, BadTargetsAreOneLineUsageErrorsNamingTheStoredDevices) {
  const std::string db = synth("bad", "NVIDIA H200");
  std::ofstream(dir() + "/not-a-profile.json") << "{\"schema\": \"edo.plan/1\"}";
  for (const std::string& target : {std::string("'TPU v5'"), std::string("''"), dir() + "/missing.json", dir() + "/not-a-profile.json"}) {
    const auto r = run_command(edo("tune " + db + kQuick + " --target-device " + target));
    // A name or path that is neither a stored device nor a file is a bad flag (2); a file that is
    // there but is not a device profile is a bad file (1: README's exit-code table).
    EXPECT_EQ(r.exit_code, target.find("not-a-profile") == std::string::npos ? 2 : 1) << target << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    if (target.find("not-a-profile") == std::string::npos) {
      EXPECT_NE(r.err.find("NVIDIA H200"), std::string::npos) << r.err;
    }
  }
}

TEST(TargetDevice, BenchSavesAProfileThatTuneModels) {
  auto r = run_command(edo("bench --backend cpu --rows 4096 --dim 16 --batch 1024 --pooling 8 --strategies fp32,int8 --reps 1 "
                           "--sets 1 -q --save-device 'Test Device'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(dir() + "/devices/test-device.json")) << r.err;
  EXPECT_NE(r.err.find("Test Device"), std::string::npos) << r.err;
  const std::string db = synth("saved", "Test Device");
  r = run_command(edo("tune " + db + kQuick + " --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["timing"]["device"], "Test Device");
  // Without fp32 there is nothing to calibrate with.
  r = run_command(edo("bench --backend cpu --rows 4096 --dim 16 --strategies int8 --reps 1 -q --save-device x"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

}  // namespace
