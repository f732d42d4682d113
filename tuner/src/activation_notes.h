// Issue 33 point 2, the tuner's part: where recomputing a table's lookup output in the backward
// pass (activation checkpointing) would save more memory than any format change measured.
#pragma once

#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/model/tune.h"

namespace edo::tuner {

// One note per tuned training table whose recorded activation output per step (pytorch.activation,
// edo/tuner/llm_facts.h; only tables trained through their lookups: gradient bytes > 0) is more
// than the largest saving of its candidates that are usable, not rejected and within the error
// limit (the recorded device bytes less the candidate's): "T: recomputing its lookups' output in
// the backward pass (activation checkpointing) would free X per step, more than the best format
// change measured (Y, fp16)".
std::vector<std::string> checkpointing_notes(const model::Profile& profile, const model::TuneResult& r);

}  // namespace edo::tuner
