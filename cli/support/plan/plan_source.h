// Where a plan comes from on the command line (`edo export FILE`, `edo diff --plan FILE`): an
// .edodb (its latest plan, from `edo tune`) or a JSON/YAML plan file, validated by plan import.
#pragma once

#include <cstdint>
#include <string>

#include "edo/model/tune.h"

namespace edo::cli {

// `run`: 0 for the latest tune run that found a plan (a failed run never hides the last good
// plan), else that run (`--run N`, as `edo report` lists them; .edodb only).
// Throws Failure (exit 1) for a missing file, a recording without a plan, or a plan file that is
// not the documented edo.plan/1 schema: one line each.
model::TuneResult load_plan_source(const std::string& path, int64_t run = 0);

}  // namespace edo::cli
