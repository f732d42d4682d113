// `edo export --format fbgemm-bench`: a recording's access pattern as FBGEMM's TBE benchmark
// configuration (fbgemm_gpu/tbe/bench/tbe_data_config.py, TBEDataConfig), one per table.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "edo/model/profile.h"

namespace edo::tuner {

// FBGEMM's index distribution (tbe_estimate_indices_distribution: fbgemm_gpu/src/tbe/eeg/
// indices_estimator.cpp): the heavy hitters (the top rows' shares of the lookups, at most 20,
// until they hold more than 90 %) and the Zipf (k + q)^-s its maximum likelihood sweep fits to
// the rest. `counts`: the rows' read counts, descending (zero counts left out).
struct IndicesDistribution {
  std::vector<double> heavy_hitters;
  double zipf_q = 1;  // FBGEMM's defaults (ZipfParameters: q 1, s 2) when no fit is consistent
  double zipf_s = 2;
};
IndicesDistribution estimate_indices_distribution(const std::vector<uint64_t>& counts);

// {"schema": "edo.fbgemm-bench/1", "steps", "tables": {name: {"config": TBEDataConfig's dict,
// "edo": what edo knows beside it}}} for every table of the recording (the CLI reads it from an
// .edodb: cli/support/plan/recording_exports.h).
nlohmann::ordered_json fbgemm_bench_json(const model::Profile& profile);

}  // namespace edo::tuner
