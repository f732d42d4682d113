// The candidates of one table group: every strategy worth measuring (formats, offload with
// cache sizes read off the recorded curves, pruning of rows never read) and, for a training
// job, the optimizer-state lever on each, with exact device and host bytes (weights from the
// kernels' own formula, plus optimizer state, gradients and metadata).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "edo/kernels/strategy.h"
#include "edo/model/strategy_params.h"
#include "workload.h"

namespace edo::tuner {

// Exact memory of a kernels strategy spec for a rows x dim table (the kernels' formula, no
// encoding). `kept_rows`: rows a pruned table keeps.
struct FormatSize {
  uint64_t device_bytes = 0;
  uint64_t host_bytes = 0;
};
using SizeFn = std::function<FormatSize(const kernels::StrategySpec& spec, uint64_t rows, uint32_t dim, uint64_t kept_rows)>;

struct Candidate {
  std::string strategy;        // kernels strategy name
  // The kernels' spec (what is encoded and measured): its text, as stored and exported, and
  // that text parsed once (set_spec), which the sizes, encoders and models take.
  std::string spec;
  kernels::StrategySpec kernel;
  model::StrategyParams params;  // the parameters a reader needs
  std::string optimizer;       // "" (as recorded / inference), "rowwise_adagrad", "sparse_adam",
                               // "sparse_adagrad", "frozen", "tie_head" (llm_candidates.h) or
                               // "trim_vocab" (trim_candidates.h)
  bool baseline = false;       // the table as recorded
  bool needs_retraining = false;
  int level = 0;               // measurement order: every table's level 0 first, then level 1...
  int measure_as = -1;         // index of the candidate whose measurement this one shares (-1: itself)
  uint64_t cache_rows = 0;     // offload
  std::optional<double> recorded_hit_rate;  // offload: the recording's LRU curve / coverage at cache_rows
  // Offload: the hit rate on the held-out part of the recorded order (cache_replay.h); unset
  // when the recording has no usable ordered sample (params "hit_rate_estimated" says why).
  std::optional<double> heldout_hit_rate;
  uint64_t device_bytes = 0;   // weights + optimizer state + gradients + metadata
  uint64_t host_bytes = 0;
  uint64_t ssd_bytes = 0;      // ssd (ssd_candidates.h): the whole table on the SSD
  // A modelled time added to the measured one it shares (measure_as): ssd's misses over the
  // host link and from the SSD (ssd_candidates.h).
  double added_us = 0;
  std::string why_not;         // set when the candidate cannot be measured (kept, with the reason)
  // Pruning: the error on held-out lookups (model::held_out_split), replacing the measured
  // one (0 on the rows the whole recording read); unset when the recording cannot say.
  std::optional<double> held_out_error;
  // Pruning: its loss was measured on held-out lookups (model::TuneCandidate::validated).
  bool validated = true;

  // Sets `spec` and `kernel`; throws std::invalid_argument for text that is not a kernels spec.
  void set_spec(const std::string& text);
};

// Cache sizes (rows) for offload: the recorded LRU curve's first points at or above 50, 80, 90,
// 95 and 99 % hits (the curve's own points, never interpolated), below the table's rows, sizes
// within 5 % of each other merged. Exposed for tests.
std::vector<uint64_t> offload_cache_rows(const stats::TableSummary& summary, uint64_t rows);

// The baseline spec of a recorded dtype ("fp32" -> "fp32", "fp8_e4m3" -> "fp8"; old spellings
// too), or "" when the table is already quantised by the job (int8/uint8: no fp32 source to
// encode from).
std::string baseline_spec(const std::string& dtype);

std::vector<Candidate> enumerate_candidates(const TableGroup& group, const SizeFn& size);

}  // namespace edo::tuner
