// The TorchRec export's file (plan_to_torchrec, plan_io.h) around its per-table entries: the
// sections plan_torchrec.cpp fills table by table, and the fixed text that frames them (the
// header comment, imports, the EdoCacheStatistics class, EDO_PLAN and each dict's comment).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "edo/model/tune.h"

namespace edo::tuner {

// The entries of each dict or list of the file, Python lines in the plan's table order.
struct TorchRecSections {
  std::string constraints, data_types, edo_only, why_edo_only, post_pruning, shared, managed, key_value, paths, fbgemm_bytes,
      cache_statistics, placement;
  uint64_t fbgemm_total = 0;  // what FBGEMM's offload layout adds to the plan's device bytes
  // Every training table given TorchRec's fused kernel (the sharder's fused_params reach them
  // all), and the ones the plan moved to row-wise Adagrad.
  bool rowwise_adagrad = false;
  std::string fused_tables, rowwise_tables;
  size_t fused_count = 0, rowwise_count = 0;
};

// The whole file: the fixed text with `s` in its places.
std::string torchrec_file_text(const model::TuneResult& r, const TorchRecSections& s);

}  // namespace edo::tuner
