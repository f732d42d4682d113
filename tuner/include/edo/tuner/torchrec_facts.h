// What a recording knows about its tables for `edo export --format torchrec`: the TorchRec
// config name and features the PyTorch hook noted (metadata "torchrec.table.NAME", see
// profiler/python/edo/_torchrec.py), lookups, bags and steps, and TorchRec's CacheStatistics
// from the recorded LRU curve.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/tuner/plan_io.h"

namespace edo::tuner {

// Facts of every table of an .edodb; empty for a plan file (nothing recorded to read). Used by
// `edo export` and the dashboard's export, which must write the same file.
std::map<std::string, TorchRecFacts> torchrec_facts_of_file(const std::string& path);
std::map<std::string, TorchRecFacts> torchrec_facts(const model::Profile& profile);

}  // namespace edo::tuner
