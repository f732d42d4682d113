// A fake GPU recording: the shape of what `edo record` writes for a CUDA training job, made
// without a GPU. Table accesses go through the real statistics engine (bounded Zipf, like
// `edo synth`); the device memory timeline, kernels and NVTX ranges are generated: weights
// allocated at start, optimizer state at the first step, activations churning every step
// (one step much bigger, the peak), kernels reading the tables. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "edo/model/profile.h"

namespace edo::gui::fake {

struct FakeGpuRecordingOptions {
  int tables = 8;
  uint64_t rows = 200'000;         // rows of the biggest table; table t has rows / 2^(t % 4)
  bool same_rows = false;          // every table has `rows` rows
  uint32_t dim = 64;
  double zipf = 1.05;
  uint64_t lookups = 400'000;      // per table
  int sessions = 1;                // processes (ranks); each records every table
  uint64_t memory_events = 20'000; // per session, approximately
  uint64_t steps = 200;
  double duration_s = 60.0;
  // The first session's loss counters by name (edo/model/drops.h), as the collector stores
  // them; its dropped_events is their event counters' sum.
  std::map<std::string, uint64_t> drops;
  bool tie_last_table = true;      // register the last table's weights under a second name too
  bool tied_name_reads = true;     // false: the second name reads nothing (counted with the owner)
  // The training loss per step of the first session (what the PyTorch hooks record): 0 records
  // none; otherwise a decaying curve times this scale, with seeded noise. From step
  // loss_nan_at on (0: never) the loss is NaN, a training the plan broke.
  double loss_scale = 0;
  uint64_t loss_nan_at = 0;
  uint64_t seed = 1;
};

model::Profile make_fake_gpu_profile(const FakeGpuRecordingOptions& options);

// Writes it as an .edodb (replacing the file). Throws db::DbError.
void write_fake_gpu_recording(const std::string& path, const FakeGpuRecordingOptions& options);

}  // namespace edo::gui::fake
