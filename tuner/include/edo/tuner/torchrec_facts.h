// What a recording knows about its tables for `edo export --format torchrec`: the TorchRec
// config name and features the PyTorch hook noted (metadata "torchrec.table.NAME", see
// profiler/python/edo/facts/_torchrec.py), lookups, bags and steps, and TorchRec's CacheStatistics
// from the recorded LRU curve.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/model/profile_summary.h"
#include "edo/tuner/plan_io.h"

namespace edo::tuner {

// Facts of every table of a recording (keyed by the table's recorded name), from its table
// views: what `edo export --format torchrec` passes to plan_to_torchrec(). A plan file has no
// recording: its facts are empty. The CLI reads the profile from the .edodb (cli/support/
// recording_exports.h); the dashboard computes the same facts once when it loads a recording.
std::map<std::string, TorchRecFacts> torchrec_facts(const model::Profile& profile);
// The facts of one table view of `profile`. `aggregate`: the view's statistics with the ordered
// sample when the recording kept one (the held-out miss curve is replayed from it; without one
// the recorded LRU curve is used): the view's own aggregate, or the same one decoded again by a
// reader that loaded the profile without ordered samples (the dashboard). `steps`:
// recorded_steps(profile).
TorchRecFacts torchrec_facts_of_view(const model::Profile& profile, const model::TableView& view,
                                     const stats::TableAggregate& aggregate, uint64_t steps);
// The recording's steps, summed over its sessions, as the tuner counts them.
uint64_t recorded_steps(const model::Profile& profile);

}  // namespace edo::tuner
