// Issue 33 point 2, the tuner's part: where recomputing a table's lookup output in the backward
// pass (activation checkpointing) would save more memory than any format change measured.
#pragma once

#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/model/tune.h"
#include "workload.h"

namespace edo::tuner {

// One note per tuned training table whose recorded activation output per step (pytorch.activation,
// edo/tuner/llm_facts.h; only tables trained through their lookups: gradient bytes > 0) is more
// than the largest saving of its candidates that are usable, not rejected and within the error
// limit (the recorded device bytes less the candidate's): "T: recomputing its lookups' output in
// the backward pass (activation checkpointing) would free X per step, more than the best format
// change measured (Y, fp16)".
std::vector<std::string> checkpointing_notes(const model::Profile& profile, const model::TuneResult& r);

// The rows of a table's lookup output in its busiest recorded step (tokens of B x T x D, or bags
// of bags x D): the recorded output bytes / (dim x the output's element size); 0 when the hooks
// recorded no activation (a C API or synthetic recording).
uint64_t activation_rows_per_step(const TableGroup& g);

// What a factorised lookup (low rank r: rows x r, then a projection r x D) adds per step: its
// rows x r intermediate in the output's dtype and, when the lookups are trained (a gradient was
// recorded for the output), that intermediate's gradient. 0 without a recorded activation.
uint64_t lowrank_activation_bytes(const TableGroup& g, uint32_t rank);

}  // namespace edo::tuner
