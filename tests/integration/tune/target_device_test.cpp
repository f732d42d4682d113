// `edo tune --target-device` and the default target end to end (issue 19 point 5): a GPU job's
// recording tuned here (no GPU) is "modelled for NVIDIA H200", a CPU job's is measured, a GPU
// without a stored profile is measured with a note, bad targets are usage errors naming the
// stored devices, and `edo bench --save-device` stores a profile `edo tune` then models.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

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

// Issue 34 point 3: offload weighed against the formats that fit, on times modelled for an
// H200 (exact, so the answer cannot move with this machine's load). One table of 50,000 x 32
// fp32 (6.10 MiB). Uniform lookups at 4 MiB: fp16 (3.05 MiB, error ~0.0002) fits, and so does an
// offload at 57 % hits whose misses cross the host link: fp16 is taken (before issue 34 the
// lossless offload was). Zipf 1.2 at 1 MiB: nothing of negligible error fits, the offload is
// the only way, and it stays.
TEST(TargetDevice, AnOffloadThatSlowsTheStepLosesToANegligibleErrorThatFits) {
  auto one_table = [](const std::string& name, const std::string& zipf) {
    const std::string path = dir() + "/" + name + ".edodb";
    const auto r = run_command(edo("synth -o " + path + " --tables 1 --rows 50000 --dim 32 --zipf " + zipf +
                                   " --lookups 200000 --seed 1"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return path;
  };
  const std::string flags = " --target-device h200 --strategies fp16,bf16,int8,offload --reps 1 --json";
  auto r = run_command(edo("tune " + one_table("uniform", "0") + " --budget 4MiB" + flags));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json t = json::parse(r.out)["tables"][0];
  EXPECT_EQ(t["strategy"], "fp16") << t.dump();
  EXPECT_LT(t["error"].get<double>(), 0.001);
  EXPECT_NE(t["why"].get<std::string>().find("taken before offloading"), std::string::npos) << t["why"];
  r = run_command(edo("tune " + one_table("zipf", "1.2") + " --budget 1MiB" + flags));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  t = json::parse(r.out)["tables"][0];
  EXPECT_EQ(t["strategy"], "offload") << t.dump();
  EXPECT_NE(t["why"].get<std::string>().find("none fits the budget"), std::string::npos) << t["why"];
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

// `edo bench --storage DIR` (issue 35 point 1): the drive's figures, the probe file removed, and
// with --save-device added to a stored profile; bad directories and names fail in one line.
namespace {

std::string storage_dir(const std::string& name) {
  const std::string d = dir() + "/" + name;
  fs::create_directories(d);
  return d;
}

const char* kQuickStorage = " --storage-bytes 4MiB --storage-seconds 0.05 -q";

TEST(StorageBench, MeasuresTheDriveAndLeavesNoFile) {
  const std::string d = storage_dir("drive");
  const auto r = run_command(edo("bench --storage " + d + kQuickStorage + " --dim 1500 --json"));
  if (r.exit_code == 1 && r.err.find("in memory") != std::string::npos) GTEST_SKIP() << "the test folder is on tmpfs: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "edo.storage/1");
  const json& s = j["storage"];
  EXPECT_EQ(s["file_bytes"].get<uint64_t>(), 4u << 20);
  // A 6000-byte row (--dim 1500 x 4 B) is read as whole aligned blocks: two of 4 KiB.
  const auto block = s["block_bytes"].get<uint32_t>();
  EXPECT_EQ(s["row_bytes"].get<uint32_t>(), 6000u);
  EXPECT_EQ(s["row_read_bytes"].get<uint32_t>(), (6000 + block - 1) / block * block);
  for (const char* k : {"random_4k_qd1", "random_4k_qd32", "row_qd1", "row_qd32"}) {
    EXPECT_GT(s[k]["reads"].get<uint64_t>(), 0u) << k;
    EXPECT_GT(s[k]["reads_per_s"].get<double>(), 0) << k;
    EXPECT_GT(s[k]["mean_latency_us"].get<double>(), 0) << k;
  }
  EXPECT_GT(s["random_4k_qd1"]["p99_latency_us"].get<double>(), 0);
  EXPECT_GT(s["seq_read_gbs"].get<double>(), 0);
  EXPECT_GT(s["seq_write_gbs"].get<double>(), 0);
  EXPECT_TRUE(fs::is_empty(d)) << "the probe file was left in " << d;
  // The text form names each figure.
  const auto t = run_command(edo("bench --storage " + d + kQuickStorage));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  for (const char* k : {"random 4 KiB, QD 1", "random 4 KiB, QD 32", "row 512 B, QD 32", "sequential read", "sequential write"})
    EXPECT_NE(t.out.find(k), std::string::npos) << k << "\n" << t.out;
}

TEST(StorageBench, SaveDeviceAddsTheStorageToAStoredProfile) {
  // A stored profile first (a quick CPU bench), then the storage beside its figures.
  auto r = run_command(edo("bench --backend cpu --rows 2000 --dim 8 --batch 256 --pooling 4 --strategies fp32 --reps 1 --sets 1 -q "
                           "--save-device storagebox"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string saved = dir() + "/devices/storagebox.json";
  ASSERT_TRUE(fs::exists(saved));
  const json before = json::parse(std::ifstream(saved));
  EXPECT_FALSE(before.contains("storage"));
  r = run_command(edo("bench --storage " + storage_dir("box") + kQuickStorage + " --save-device storagebox"));
  if (r.exit_code == 1 && r.err.find("in memory") != std::string::npos) GTEST_SKIP() << "the test folder is on tmpfs: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("added the storage under"), std::string::npos) << r.err;
  const json after = json::parse(std::ifstream(saved));
  ASSERT_TRUE(after.contains("storage"));
  EXPECT_GT(after["storage"]["random_4k_qd32"]["reads_per_s"].get<double>(), 0);
  EXPECT_EQ(after["memory_gbs"], before["memory_gbs"]);  // the rest of the profile is kept
  EXPECT_EQ(after["host_link_gbs"], before["host_link_gbs"]);
  // The profile with storage is still a target the tuner reads.
  const std::string db = synth("storagebox", "");
  r = run_command(edo("tune " + db + kQuick + " --target-device storagebox --json"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(StorageBench, BadDirectoriesAndNamesAreOneLineErrors) {
  auto r = run_command(edo("bench --storage " + dir() + "/no-such-dir" + kQuickStorage));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is not a directory; give a directory on the drive to measure"), std::string::npos) << r.err;
  // An unknown profile fails before any measuring: no probe file is written.
  const std::string d = storage_dir("unnamed");
  r = run_command(edo("bench --storage " + d + kQuickStorage + " --save-device no-such-gpu"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no stored device profile of that name"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(d));
  r = run_command(edo("bench --storage " + d + " --storage-bytes 12KiB"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--storage-bytes must be at least 1MiB"), std::string::npos) << r.err;
  // A file system in memory is not a drive.
  struct stat st {};
  if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) {
    r = run_command(edo("bench --storage /dev/shm" + std::string(kQuickStorage)));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("is in memory (tmpfs or ramfs), not on a drive"), std::string::npos) << r.err;
  }
}

}  // namespace
