#include "edo/tuner/summary.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "edo/model/profile_summary.h"
#include "edo/text/duration.h"

namespace edo::tuner {
namespace {

std::string printf_text(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string change(double before, double after) {
  if (!(before > 0)) return "";
  return " (" + printf_text("%+.1f", 100.0 * (after - before) / before) + "%)";
}

}  // namespace

std::string weights_text(const model::TuneResult& r) {
  size_t tuned = 0, recorded = 0;
  for (const auto& t : r.tables) {
    if (!t.tuned || !t.shares_with.empty()) continue;
    ++tuned;
    recorded += t.weights == "recorded";
  }
  // A result without its tables (a plan read back from a document) has only the word.
  if (tuned == 0) return r.weights;
  if (recorded == tuned) return "recorded";
  if (recorded == 0) return "synthetic";
  return "recorded for " + std::to_string(recorded) + " of " + std::to_string(tuned) + " tables (synthetic for the others)";
}

std::string timing_text(const model::TuneResult& r) {
  const std::string machine = std::string(r.backend == "cuda" ? "GPU" : "CPU") + " (" + r.device + ")";
  if (r.timing_kind == model::RunTiming::kModelled)
    return "times modelled for " + r.timing_device + " (device model; no lookups timed), errors computed on the " + machine;
  return "measured on: " + machine;
}

std::string run_text(const model::TuneResult& r, const model::ReasonWords& words) {
  std::string s = std::to_string(r.candidates_measured) + " of " + std::to_string(r.candidates_total) + " candidates " +
                  std::string(model::to_string(r.timing_kind)) + " in " + printf_text("%.0f", r.elapsed_s) + " s";
  if (r.complete) return s;
  if (r.stop_reason == model::StopReason::kTimeLimit)
    return s + "; " + words.say({.code = model::Reason::kStoppedByTimeLimit, .value = r.time_limit_s > 0 ? r.time_limit_s : NAN}) +
           ": the plan uses what was measured (" + words.say({.code = model::Reason::kLargerTimeLimit, .name = "measures more"}) + ")";
  if (r.stop_reason == model::StopReason::kCancelled) return s + "; stopped by Ctrl-C: the plan uses what was measured";
  return s + "; stopped early";
}

bool trains_in_low_precision(const model::TuneResult& r, const model::TuneCandidate& c) {
  const model::TuneTable* t = r.table_named(c.table);
  const bool from_fp32 = t && (t->dtype == "fp32" || t->dtype == "f32");
  return t && t->training && from_fp32 && (c.strategy == "fp16" || c.strategy == "bf16");
}

std::string strategy_label(const model::TuneResult& r, const model::TuneCandidate& c) {
  std::string s = c.strategy;
  if (trains_in_low_precision(r, c)) s += "+fp32_state+sr";
  if (c.optimizer == "rowwise_adagrad") s += "+rowwise_adagrad(sparse)";
  if (c.optimizer == "sparse_adam") s += "+sparse_adam(sparse)";
  if (c.optimizer == "sparse_adagrad") s += "+adagrad(sparse)";
  if (c.optimizer == "frozen") s += "+frozen";
  if (c.optimizer == "tie_head") s += "+tied_head";
  if (c.optimizer == "trim_vocab") s += "+trim_vocab";
  return s;
}

std::string error_text(const model::TuneCandidate& c) {
  if (!c.validated) return "not validated";
  if (!std::isfinite(c.error)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", c.error);
  return b;
}

namespace {

// Why there is no plan, after "plan: none" or "no plan": " fits 1.00 MiB; the smallest ...".
// An early stop leaves candidates unmeasured: a verdict about budgets is about the measured
// ones only, and says so.
std::string why_no_plan(const model::TuneResult& r, const model::ReasonWords& words) {
  const std::string measured =
      r.complete                                      ? ""
      : r.stop_reason == model::StopReason::kTimeLimit ? " among the candidates measured " + words.say({.code = model::Reason::kBeforeTimeLimitStopped})
                                                      : " among the candidates measured before the run stopped";
  if (const std::string tiers = tier_shortfall(r, words); !tiers.empty()) return " fits: " + tiers + measured;
  if (r.min_feasible_bytes == UINT64_MAX)
    return ": some table has no measured candidate within the error limit" + measured + "; " +
           words.say({.code = r.complete ? model::Reason::kRaiseMaxError : model::Reason::kRaiseTimeLimitOrMaxError});
  const std::string per = r.devices > 1 ? " per device" : "";
  return " fits " + model::format_bytes(r.budget_bytes) + per + (r.devices > 1 ? " on " + std::to_string(r.devices) + " devices" : "") +
         measured + "; the smallest feasible budget is " + model::format_bytes(r.min_feasible_bytes) + per + " (" +
         std::to_string(r.min_feasible_bytes) + " bytes)" +
         (r.complete ? "" : ", of the measured candidates: " + words.say({.code = model::Reason::kLargerTimeLimit, .name = "may find a smaller one"}));
}

}  // namespace

std::string no_plan_text(const model::TuneResult& r, const model::ReasonWords& words) { return "no plan" + why_no_plan(r, words); }

std::string verdict_text(const model::TuneResult& r, const model::ReasonWords& words) {
  if (!r.feasible) return "plan: none" + why_no_plan(r, words);
  const double saved = static_cast<double>(r.baseline_device_bytes) - static_cast<double>(r.plan_device_bytes);
  return "plan: " + model::format_bytes(r.plan_device_bytes) + " device" +
         (r.devices > 1 ? " over " + std::to_string(r.devices) + " devices" : "") +
         change(static_cast<double>(r.baseline_device_bytes), static_cast<double>(r.plan_device_bytes)) + ", " +
         model::format_bytes(r.plan_host_bytes) + " host, " +
         (r.plan_ssd_bytes > 0 ? model::format_bytes(r.plan_ssd_bytes) + " SSD, " : "") + format_duration_us(r.plan_step_us) + " per step" +
         change(r.baseline_step_us, r.plan_step_us) + "; " + (saved >= 0 ? "saves " : "adds ") +
         model::format_bytes(static_cast<uint64_t>(std::fabs(saved)));
}

std::vector<std::string> summary_lines(const model::TuneResult& r, const model::ReasonWords& words) {
  std::vector<std::string> out;
  out.push_back(timing_text(r));
  out.push_back("weights: " + weights_text(r) + "; " + run_text(r, words));
  std::string budget = "budget: " + model::format_bytes(r.budget_bytes);
  if (r.devices > 1) budget += " per device on " + std::to_string(r.devices) + " devices";
  if (r.host_budget_bytes > 0) budget += ", host " + model::format_bytes(r.host_budget_bytes);
  if (r.ssd_budget_bytes > 0) budget += ", SSD " + model::format_bytes(r.ssd_budget_bytes);
  if (std::isfinite(r.max_error)) budget += ", max error " + printf_text("%.3g", r.max_error) + " per table";
  budget += "; objective: " + std::string(model::to_string(r.objective)) +
            (r.objective == model::Objective::kSpeed ? " (the fastest plan within the error limit)"
                                    : " (the least loss that fits, then the fastest)");
  out.push_back(budget);
  for (size_t i = 0; i < r.notes.size(); ++i) out.push_back("note: " + model::in_words(r.notes[i], r.note_reasons, words, static_cast<uint32_t>(i)));
  out.push_back("baseline: " + model::format_bytes(r.baseline_device_bytes) + " device, " +
                format_duration_us(r.baseline_step_us) + " per step");
  out.push_back(verdict_text(r, words));
  return out;
}

}  // namespace edo::tuner
