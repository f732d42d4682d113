// What `edo export` reads from a recording besides its plan: the TorchRec facts of its tables
// (for --format torchrec) and FBGEMM's benchmark configuration (--format fbgemm-bench). The
// tuner computes both from a profile and never opens a file; this reads the profile (with the
// tables' ordered samples: the held-out miss curves are replayed from them).
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "edo/tuner/plan_io.h"

namespace edo::cli {

// tuner::torchrec_facts() of the .edodb at `path`; empty for a plan file (nothing recorded).
std::map<std::string, tuner::TorchRecFacts> torchrec_facts_of_file(const std::string& path);
// tuner::fbgemm_bench_json() of the .edodb at `path`; throws std::runtime_error when `path` is
// not one (a plan file has no access counts).
nlohmann::ordered_json fbgemm_bench_of_file(const std::string& path);

}  // namespace edo::cli
