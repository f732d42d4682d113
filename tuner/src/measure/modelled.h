// A candidate's "measurement" when the plan's times are modelled for a GPU that is not here
// (docs/tuning.md "Device model"): the error computed as measure() does (the encoded table on
// the reference rows), the step time from the device model, no lookups timed.
#pragma once

#include "candidates.h"
#include "edo/tuner/device_model.h"
#include "edo/tuner/device_profile.h"
#include "measure.h"
#include "workload.h"

namespace edo::tuner {

// lookup_traffic (edo/tuner/device_model.h) of a spec already parsed: a candidate's.
LookupTraffic lookup_traffic(const kernels::StrategySpec& spec, uint32_t dim, double hit_rate, double sector_bytes);

// Offload's hit rate: the recording's (the LRU curve, or the static hot set's coverage, at the
// cache's rows), else the LRU replayed on the access model, else 0.
Measurement model_candidate(const TableBench& bench, const TableGroup& group, const Candidate& c, const DeviceProfile& device,
                            const TuneOptions& options);

}  // namespace edo::tuner
