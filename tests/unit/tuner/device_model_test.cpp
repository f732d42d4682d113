// The device model (edo/tuner/device_model.h) on hand-computable cases, the stored device
// profiles and their lookup (edo/tuner/device_profile.h), and tune() with modelled times: a GPU
// recording tuned on the CPU is "modelled for NVIDIA H200", offload costs its misses over the
// host link, fp16 and bf16 cost the same, and the plan never mixes modelled and measured times.
#include "edo/tuner/device_model.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "edo/kernels/backend.h"
#include "edo/tuner/device_profile.h"
#include "edo/tuner/plan_io.h"
#include "edo/tuner/summary.h"
#include "edo/tuner/tuner.h"
#include "recordings.h"

namespace edo::tuner {
namespace {

const DeviceProfile& h200() { return builtin_devices().at(0); }

TEST(DeviceModel, SectorsOfHandComputedRows) {
  EXPECT_DOUBLE_EQ(sectors_touched(256, 256, 32), 8);  // fp32 dim 64: 256 B = 8 sectors
  EXPECT_DOUBLE_EQ(sectors_touched(128, 128, 32), 4);  // fp16 dim 64
  // int8 dim 64: 64 codes + fp32 scale and bias = 72 B at an 80 B stride: starts at offsets 0
  // and 16 of a sector, 3 sectors either way.
  EXPECT_DOUBLE_EQ(sectors_touched(72, 80, 32), 3);
  // 20 B at a 20 B stride: offsets 0, 20, 8, 28, 16, 4, 24, 12 -> 1, 2, 1, 2, 2, 1, 2, 1.
  EXPECT_DOUBLE_EQ(sectors_touched(20, 20, 32), 1.5);
  EXPECT_DOUBLE_EQ(sectors_touched(256, 256, 64), 4);  // a CPU's 64-byte lines
  EXPECT_DOUBLE_EQ(sectors_touched(0, 16, 32), 0);
}

TEST(DeviceModel, TrafficPerFormat) {
  const LookupTraffic fp32 = lookup_traffic("fp32", 64, 0);
  EXPECT_DOUBLE_EQ(fp32.sectors, 8);
  EXPECT_DOUBLE_EQ(fp32.stream_bytes, 8 + 256);  // the int64 index and the fp32 output row
  EXPECT_EQ(fp32.launches, 1);
  const LookupTraffic fp16 = lookup_traffic("fp16", 64, 0), bf16 = lookup_traffic("bf16", 64, 0);
  EXPECT_DOUBLE_EQ(fp16.sectors, 4);
  EXPECT_DOUBLE_EQ(bf16.sectors, fp16.sectors);
  EXPECT_DOUBLE_EQ(lookup_traffic("int8", 64, 0).sectors, 3);
  // int4 dim 64: 32 B of codes + fp16 scale and bias = 36 B at a 48 B stride: 2 sectors.
  EXPECT_DOUBLE_EQ(lookup_traffic("int4", 64, 0).sectors, 2);
  // fp8 dim 64 with a row scale: 68 B at an 80 B stride: 3 sectors.
  EXPECT_DOUBLE_EQ(lookup_traffic("fp8", 64, 0).sectors, 3);
  // PQ m = 8: 8 code bytes (one sector), the codebook's 64 floats on chip.
  const LookupTraffic pq = lookup_traffic("pq:m=8", 64, 0);
  EXPECT_DOUBLE_EQ(pq.sectors, 1);
  EXPECT_DOUBLE_EQ(pq.onchip_bytes, 256);
  // Multi-hash k = 2: two 256 B rows.
  EXPECT_DOUBLE_EQ(lookup_traffic("multihash:buckets=100:k=2", 64, 0).sectors, 16);
  // Low rank 8: a 32 B row of A, B's 8 x 64 floats on chip.
  const LookupTraffic lr = lookup_traffic("lowrank:rank=8", 64, 0);
  EXPECT_DOUBLE_EQ(lr.sectors, 1);
  EXPECT_DOUBLE_EQ(lr.onchip_bytes, 2048);
  // QR m = 4: a quotient row from memory, the remainder on chip.
  EXPECT_DOUBLE_EQ(lookup_traffic("qr:m=4", 64, 0).sectors, 8);
  // Pruned: the remap entry's sector and the row.
  EXPECT_DOUBLE_EQ(lookup_traffic("pruned", 64, 0).sectors, 9);
  // Offload, 90 % hits: hits read 8 sectors of the cache, every lookup its slot; misses move
  // 256 B over the host link.
  const LookupTraffic off = lookup_traffic("offload:cache=0.1:policy=static", 64, 0.9);
  EXPECT_NEAR(off.sectors, 0.9 * 8 + 1, 1e-12);
  EXPECT_NEAR(off.host_bytes, 0.1 * 256, 1e-12);
  EXPECT_EQ(off.launches, 1);
  const LookupTraffic lru = lookup_traffic("offload:cache=0.1:policy=lru", 64, 0.9);
  EXPECT_EQ(lru.launches, 13);
  EXPECT_GT(lru.stream_bytes, off.stream_bytes);
  EXPECT_THROW(lookup_traffic("nonsense", 64, 0), std::invalid_argument);
}

TEST(DeviceModel, StepTimeOnTheH200) {
  const DeviceProfile& d = h200();
  EXPECT_EQ(d.name, "NVIDIA H200");
  EXPECT_DOUBLE_EQ(d.memory_gbs, 4222);
  EXPECT_DOUBLE_EQ(d.gather_rows_per_s, 8.25e9);
  EXPECT_DOUBLE_EQ(d.sectors_per_s(), 8.25e9 * 16);  // 512 B rows: 16 sectors each
  EXPECT_FALSE(d.host_link_measured);
  EXPECT_NE(d.host_link_basis.find("nominal"), std::string::npos);
  // fp32 dim 64, 1M lookups: 8 sectors / 132e9 + 264 B / 4222e9 per lookup, one launch.
  const double want = 1e6 * (8 / 132e9 + 264 / 4222e9) * 1e6 + d.launch_us;
  EXPECT_NEAR(modelled_step_us(lookup_traffic("fp32", 64, 0), 1e6, d), want, want * 1e-12);
  // Offload at 90 % hits: the misses' 25.6 B per lookup over a 64 GB/s link cost more than
  // the baseline's whole lookup: several times the baseline, not a few percent more.
  const double base = modelled_step_us(lookup_traffic("fp32", 64, 0), 1e6, d);
  const double off = modelled_step_us(lookup_traffic("offload:cache=0.1:policy=static", 64, 0.9), 1e6, d);
  EXPECT_GT(off / base, 3.0);
  EXPECT_DOUBLE_EQ(modelled_step_us(lookup_traffic("fp16", 64, 0), 1e6, d),
                   modelled_step_us(lookup_traffic("bf16", 64, 0), 1e6, d));
}

// A temporary EDO_DEVICE_DIR for the profiles a test saves.
class DeviceDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/edo-devices-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    setenv("EDO_DEVICE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("EDO_DEVICE_DIR");
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;
};

TEST_F(DeviceDir, StoredNamesMatchUpToCaseSpacesAndVendor) {
  for (const char* name : {"NVIDIA H200", "h200", "nvidia   H200 "}) {
    auto d = find_stored_device(name);
    ASSERT_TRUE(d) << name;
    EXPECT_EQ(d->name, "NVIDIA H200");
  }
  EXPECT_FALSE(find_stored_device("NVIDIA H100"));
  EXPECT_FALSE(find_stored_device(""));
}

TEST_F(DeviceDir, AnUnknownTargetNamesTheStoredDevicesAndTheFix) {
  try {
    resolve_target_device("TPU v5");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'TPU v5'"), std::string::npos) << m;
    EXPECT_NE(m.find("NVIDIA H200"), std::string::npos) << m;
    EXPECT_NE(m.find("--save-device"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST_F(DeviceDir, SavedProfilesAreStoredAndReadBack) {
  DeviceProfile a100 = h200();
  a100.name = "NVIDIA A100-SXM4-80GB";
  a100.memory_gbs = 1700;
  a100.gather_rows_per_s = 3.3e9;
  const std::string path = save_device(a100);
  EXPECT_EQ(std::filesystem::path(path).parent_path(), std::filesystem::path(dir_));
  EXPECT_NE(stored_device_names().find("NVIDIA A100-SXM4-80GB"), std::string::npos);
  const auto back = find_stored_device("a100-sxm4-80gb");
  ASSERT_TRUE(back);
  EXPECT_DOUBLE_EQ(back->memory_gbs, 1700);
  // A file is a target too.
  EXPECT_DOUBLE_EQ(resolve_target_device(path).gather_rows_per_s, 3.3e9);
  // A broken file is skipped with the reason; the stored devices stay usable.
  std::ofstream(dir_ + "/broken.json") << "{\"schema\": \"edo.device/1\", \"name\": \"x\"}";
  std::vector<std::string> problems;
  EXPECT_EQ(stored_devices(&problems).size(), 2u);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("memory_gbs"), std::string::npos) << problems[0];
}

TEST(DeviceProfileJson, FromEdoBenchCudaOutput) {
  const nlohmann::json bench = {
      {"schema", "edo.bench/1"},
      {"backend", "cuda"},
      {"anchor", {{"name", "d2d_copy"}, {"gbs", 4222.0}, {"h2d_gbs", 55.1}, {"onchip_gbs", 33454.0}}},
      {"config", {{"dim", 128}, {"kernels", "NVIDIA H200, 132 SMs, 140 GiB, sm_90"}}},
      {"results", {{{"spec", "fp32"}, {"gather_rows_per_s", 8.1e9}, {"bytes_per_row", 512.0}}}}};
  const DeviceProfile d = device_from_json(bench, "bench.json");
  EXPECT_EQ(d.name, "NVIDIA H200");
  EXPECT_DOUBLE_EQ(d.memory_gbs, 4222);
  EXPECT_DOUBLE_EQ(d.host_link_gbs, 55.1);
  EXPECT_TRUE(d.host_link_measured);
  EXPECT_DOUBLE_EQ(d.gather_rows_per_s, 8.1e9);
  EXPECT_DOUBLE_EQ(d.sectors_per_s(), 8.1e9 * 16);
  EXPECT_EQ(device_from_json(bench, "bench.json", "my gpu").name, "my gpu");
  // Round trip through edo.device/1.
  const DeviceProfile back = device_from_json(device_to_json(d), "profile");
  EXPECT_EQ(back.name, d.name);
  EXPECT_DOUBLE_EQ(back.sectors_per_s(), d.sectors_per_s());
  EXPECT_EQ(back.host_link_basis, d.host_link_basis);
  nlohmann::json no_anchor = bench;
  no_anchor["anchor"].erase("h2d_gbs");
  EXPECT_THROW(device_from_json(no_anchor, "bench.json"), std::invalid_argument);
  EXPECT_THROW(device_from_json(nlohmann::json{{"schema", "edo.plan/1"}}, "x"), std::invalid_argument);
}

// The storage figures `edo bench --storage DIR --save-device NAME` adds travel with the profile,
// and a profile whose storage lacks a figure is refused naming it (issue 35 point 1).
TEST(DeviceProfileJson, StorageFiguresRoundTripAndAreChecked) {
  const nlohmann::json reads = {{"reads_per_s", 12000.0}, {"mean_latency_us", 82.0}, {"p99_latency_us", 320.0}, {"reads", 24000}};
  const nlohmann::json storage = {{"dir", "/mnt/nvme"},     {"file_bytes", 1 << 30},   {"block_bytes", 4096},
                                  {"row_bytes", 512},       {"row_read_bytes", 4096},  {"random_4k_qd1", reads},
                                  {"random_4k_qd32", reads}, {"row_qd1", reads},        {"row_qd32", reads},
                                  {"seq_read_gbs", 1.6},    {"seq_write_gbs", 0.5},    {"method", "threads"}};
  DeviceProfile d = device_from_json(device_to_json(builtin_devices().front()), "builtin");
  EXPECT_TRUE(d.storage.is_null());  // never measured: no storage in the file either
  EXPECT_FALSE(device_to_json(d).contains("storage"));
  d.storage = storage;
  const DeviceProfile back = device_from_json(device_to_json(d), "profile");
  ASSERT_TRUE(back.storage.is_object());
  EXPECT_DOUBLE_EQ(back.storage["random_4k_qd1"]["reads_per_s"].get<double>(), 12000.0);
  EXPECT_DOUBLE_EQ(back.storage["seq_read_gbs"].get<double>(), 1.6);
  EXPECT_EQ(back.storage["row_read_bytes"].get<int>(), 4096);
  nlohmann::json bad = device_to_json(d);
  bad["storage"].erase("seq_read_gbs");
  try {
    device_from_json(bad, "saved.json");
    FAIL() << "a storage without seq_read_gbs was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("storage.seq_read_gbs"), std::string::npos) << e.what();
  }
}

// tune() of a GPU recording on the CPU backend.
model::Profile gpu_recording(const std::string& gpus) {
  auto p = testing::synthetic_profile({testing::synthetic_table("skewed", 50000, 64, 1.1, 200000, 1)}, 20);
  p.sessions[0].gpus = gpus;
  return p;
}

TuneOptions cpu_options(const std::string& backend) {
  TuneOptions o;
  o.backend = backend;
  o.budget_bytes = uint64_t{1} << 40;
  o.strategies = "fp16,bf16,int8,offload";
  o.max_error = INFINITY;
  return o;
}

const model::TuneCandidate* find(const model::TuneResult& r, const std::string& spec_prefix) {
  for (const auto& c : r.candidates)
    if (c.spec.rfind(spec_prefix, 0) == 0) return &c;
  return nullptr;
}

TEST(TuneModelled, AGpuRecordingOnTheCpuIsModelledForItsGpu) {
  auto backend = kernels::make_backend("cpu");
  const model::TuneResult r = tune(gpu_recording("NVIDIA H200"), {}, cpu_options("auto"), *backend);
  EXPECT_EQ(edo::model::to_string(r.timing_kind), "modelled");
  EXPECT_EQ(r.timing_device, "NVIDIA H200");
  EXPECT_EQ(r.backend, "cpu");  // the errors were computed there
  EXPECT_NE(summary_lines(r).at(0).find("modelled for NVIDIA H200"), std::string::npos) << summary_lines(r).at(0);
  const auto j = plan_to_json(r);
  EXPECT_EQ(j["timing"]["kind"], "modelled");
  EXPECT_EQ(j["timing"]["device"], "NVIDIA H200");
  // No CPU timing note: nothing in the plan is a CPU time.
  for (const auto& n : r.notes) EXPECT_EQ(n.find("25 GB/s"), std::string::npos) << n;
  const auto* base = find(r, "fp32");
  const auto* fp16 = find(r, "fp16");
  const auto* bf16 = find(r, "bf16");
  ASSERT_TRUE(base && fp16 && bf16);
  // The CPU's fp16/bf16 quirk is gone: the same bytes, the same time; the error decides.
  EXPECT_DOUBLE_EQ(fp16->step_us, bf16->step_us);
  EXPECT_LT(fp16->error, bf16->error);
  // Every time is the model's: the baseline's by hand.
  const double lookups = 200000.0 / 20;
  EXPECT_NEAR(base->step_us, modelled_step_us(lookup_traffic("fp32", 64, 0), lookups, h200()), 1e-9);
  // Offload costs its misses over the host link: each offload candidate's time is the
  // model's at its held-out (else recorded) hit rate, several times the baseline, not +21 %.
  int offloads = 0;
  for (const auto& c : r.candidates) {
    if (c.strategy != "offload") continue;
    ++offloads;
    ASSERT_TRUE(c.hit_rate && c.recorded_hit_rate);
    // The model's hit rate is the held-out one where the recording has its order, else the
    // recorded curve's.
    EXPECT_DOUBLE_EQ(*c.hit_rate, c.heldout_hit_rate ? *c.heldout_hit_rate : *c.recorded_hit_rate);
    EXPECT_NEAR(c.step_us, modelled_step_us(lookup_traffic(c.spec, 64, *c.hit_rate), lookups, h200()), 1e-9);
    if (*c.hit_rate < 0.95) {
      EXPECT_GT(c.step_us / base->step_us, 1.5) << c.spec << " hit " << *c.hit_rate;
    }
    EXPECT_NE(c.note.find("modelled for NVIDIA H200"), std::string::npos) << c.note;
  }
  EXPECT_GT(offloads, 0);
  for (const auto& c : r.candidates) EXPECT_TRUE(c.usable()) << c.spec << ": " << c.note;
}

TEST(TuneModelled, WithoutAStoredMatchTheCpuMeasuresAndSaysHowToModel) {
  auto backend = kernels::make_backend("cpu");
  // The recording's GPU has no stored profile.
  TuneOptions o = cpu_options("auto");
  o.strategies = "fp16";
  o.reps = 1;
  const model::TuneResult r = tune(gpu_recording("NVIDIA H100 80GB HBM3"), {}, o, *backend);
  EXPECT_EQ(edo::model::to_string(r.timing_kind), "measured");
  EXPECT_EQ(r.timing_device, r.device);
  bool said = false;
  for (const auto& n : r.notes)
    said = said || (n.find("NVIDIA H100 80GB HBM3") != std::string::npos && n.find("--target-device") != std::string::npos &&
                    n.find("NVIDIA H200") != std::string::npos);
  EXPECT_TRUE(said) << ::testing::PrintToString(r.notes);
  EXPECT_NE(summary_lines(r).at(0).find("measured on: CPU"), std::string::npos);
  // --backend cpu asks for CPU times even for a GPU whose profile is stored.
  const model::TuneResult c = tune(gpu_recording("NVIDIA H200"), {}, [&] { auto x = o; x.backend = "cpu"; return x; }(), *backend);
  EXPECT_EQ(edo::model::to_string(c.timing_kind), "measured");
}

TEST(TuneModelled, TargetDeviceModelsEvenACpuRecording) {
  auto backend = kernels::make_backend("cpu");
  auto p = gpu_recording("");
  p.tables[0].device = "host";
  TuneOptions o = cpu_options("auto");
  o.strategies = "fp16";
  o.reps = 1;
  EXPECT_EQ(edo::model::to_string(tune(p, {}, o, *backend).timing_kind), "measured");  // an inference job on a CPU
  o.target_device = "h200";
  const model::TuneResult r = tune(p, {}, o, *backend);
  EXPECT_EQ(edo::model::to_string(r.timing_kind), "modelled");
  EXPECT_EQ(r.timing_device, "NVIDIA H200");
  o.target_device = "TPU v5";
  EXPECT_THROW(tune(p, {}, o, *backend), std::invalid_argument);
}

TEST(TuneModelled, ThePlanDocumentSaysHowItsTimesWereObtained) {
  model::TuneResult r;
  r.backend = "cpu";
  r.device = "Some CPU";
  r.weights = "synthetic";
  r.timing_kind = edo::model::RunTiming::kModelled;
  r.timing_device = "NVIDIA H200";
  const model::TuneResult back = plan_from_text(plan_to_json_text(r));
  EXPECT_EQ(edo::model::to_string(back.timing_kind), "modelled");
  EXPECT_EQ(back.timing_device, "NVIDIA H200");
  EXPECT_EQ(plan_from_text(plan_to_yaml(r)).timing_device, "NVIDIA H200");
  // A plan written before timing was recorded: measured on its device.
  auto j = plan_to_json(r);
  j.erase("timing");
  const model::TuneResult old = plan_from_json(j);
  EXPECT_EQ(edo::model::to_string(old.timing_kind), "measured");
  EXPECT_EQ(old.timing_device, "Some CPU");
  j["timing"] = {{"kind", "guessed"}, {"device", "x"}};
  try {
    plan_from_json(j);
    FAIL() << "accepted";
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("guessed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace edo::tuner
