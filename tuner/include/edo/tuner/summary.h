// The plan's summary in words, one text for every reader: `edo tune` and `edo report` print
// it, the dashboard shows it, `edo tune` ends with its verdict line. Plain text (the caller
// escapes it for HTML or a terminal); sizes by model::format_bytes, times by format_duration_us.
// The advice in it (which option to change) is worded by `words`: the edo command's flags by
// default, the dashboard's fields where it passes its own (edo/model/tune_reasons.h).
#pragma once

#include <string>
#include <vector>

#include "edo/model/tune.h"

namespace edo::tuner {

// Which weights the errors were computed on, as the header, the JSON (`weights_text`) and the
// dashboard say it: "recorded", "synthetic" or "recorded for 4 of 5 tables".
std::string weights_text(const model::TuneResult& result);

// Where the times come from, never mixed: "measured on: CPU (<model>)" / "measured on: GPU
// (<name>)", or "times modelled for NVIDIA H200 (device model ...), errors computed on the CPU
// (...)" (edo/tuner/device_model.h).
std::string timing_text(const model::TuneResult& result);

// How the run went: "26 of 540 candidates measured in 71 s" and, when it stopped early, why
// and what to do ("stopped by --time-limit 120 s: the plan uses what was measured").
std::string run_text(const model::TuneResult& result, const model::ReasonWords& words = model::command_words());

// The verdict: "plan: ... saves ..." or why there is none. When the run stopped early the
// smallest budget named is that of the candidates measured, and the text says so.
std::string verdict_text(const model::TuneResult& result, const model::ReasonWords& words = model::command_words());

// An infeasible run's verdict as a sentence of its own, "no plan fits 1.00 MiB; ..." (`edo tune`'s
// error line).
std::string no_plan_text(const model::TuneResult& result, const model::ReasonWords& words = model::command_words());

// Why no plan meets the host or SSD budget (`edo tune --host-budget`, `--ssd-budget`), or "":
// for each tier over its budget in the plan the device budget gets without those limits,
// "the host budget of 1.00 GiB is 512.00 MiB short of the 1.50 GiB the plan for this device
// budget puts on the host (raise --host-budget)", then the smallest device budget that fits
// within them when there is one. "" when the plan is feasible, no tier budget is set, or the
// device budget alone is not met.
std::string tier_shortfall(const model::TuneResult& result, const model::ReasonWords& words = model::command_words());

// A plan over several devices (result.devices > 1): one line per device ("device 0: 93.3 MB,
// 1.2K lookups/step") and one per table saying where it is ("t0: row_wise over devices 0, 1, 2
// (rows 0-16666 on 0 ...)"); none for a single-device plan or when there is no plan.
std::vector<std::string> placement_lines(const model::TuneResult& result);

// The whole change a candidate makes, as STRATEGY columns and the plan's "strategy_label" say
// it: the format, then what it changes in training: "fp16+fp32_state+sr" (a training table
// trained in fp16 with fp32 optimizer state and stochastic rounding, as edo.apply_plan does),
// "+rowwise_adagrad(sparse)" (the optimizer-state lever: row-wise Adagrad on sparse gradients).
std::string strategy_label(const model::TuneResult& result, const model::TuneCandidate& c);

// The candidate trains a recorded fp32 table in fp16/bf16 (fp32 optimizer state, stochastic
// rounding): the "+fp32_state+sr" of its label and the plan's "train_precision".
bool trains_in_low_precision(const model::TuneResult& result, const model::TuneCandidate& c);

// A candidate's error as every reader shows it: "0.0012", or "not validated" when its loss was
// not measured on held-out lookups (never a 0 that was not measured).
std::string error_text(const model::TuneCandidate& c);

// Every line of the summary: timing (timing_text), weights and run, budget and objective, notes ("note:
// ...", their advice in `words`), baseline, verdict.
std::vector<std::string> summary_lines(const model::TuneResult& result, const model::ReasonWords& words = model::command_words());

}  // namespace edo::tuner
