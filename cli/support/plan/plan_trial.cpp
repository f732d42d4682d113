#include "support/plan/plan_trial.h"

#include "edo/tuner/summary.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>

namespace edo::cli {
namespace {

constexpr const char* kAppliedNote = "pytorch.plan_applied";

struct Applied {
  bool applied = true;
  std::string why;
};

// The trial's pytorch.plan_applied notes (one per process that applied the plan: the session
// notes "session.<id>.pytorch.plan_applied", and the latest as plain "pytorch.plan_applied"):
// per table, whether it was applied. A table any process could not apply counts as not applied.
std::map<std::string, Applied> applied_tables(const model::Profile& trial, std::vector<std::string>& notes) {
  std::map<std::string, Applied> out;
  const std::string suffix = std::string(".") + kAppliedNote;
  size_t unreadable = 0;
  for (const auto& [key, value] : trial.metadata) {
    const bool session_note = key.size() > suffix.size() && key.rfind("session.", 0) == 0 &&
                              key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
    if (!session_note && key != kAppliedNote) continue;
    const auto j = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("tables") || !j["tables"].is_object()) {
      ++unreadable;
      continue;
    }
    for (const auto& [name, t] : j["tables"].items()) {
      if (!t.is_object() || !t.contains("applied") || !t["applied"].is_boolean()) continue;
      Applied& a = out[name];
      if (t["applied"].get<bool>() || !a.applied) continue;
      a.applied = false;
      a.why = t.contains("why") && t["why"].is_string() ? t["why"].get<std::string>() : std::string();
    }
  }
  if (unreadable)
    notes.push_back(fmt::format("{} {} note(s) of the trial not readable (not JSON with \"tables\"): ignored", unreadable,
                                kAppliedNote));
  return out;
}

// Each planned table beside the trial's recording of it.
std::vector<TrialTable> compare_tables(const model::TuneResult& plan, const std::vector<model::TableView>& trial_tables,
                                       const std::map<std::string, Applied>& applied) {
  std::map<std::string, const model::TableView*> recorded;
  for (const auto& t : trial_tables) recorded.emplace(t.table_name, &t);
  std::vector<TrialTable> out;
  for (const auto& ch : plan.choices) {
    const model::TuneCandidate* c = ch.candidate >= 0 && static_cast<size_t>(ch.candidate) < plan.candidates.size()
                                        ? &plan.candidates[static_cast<size_t>(ch.candidate)]
                                        : nullptr;
    TrialTable e;
    e.name = ch.table;
    // The whole change (format, training precision, optimizer), as edo tune's STRATEGY says it.
    e.strategy = !ch.shares_with.empty() ? std::string("shared") : c ? tuner::strategy_label(plan, *c) : std::string("unchanged");
    e.planned_device_bytes = ch.device_bytes;
    e.planned_host_bytes = ch.host_bytes;
    if (c && std::isfinite(c->error)) e.planned_error = c->error;
    if (auto it = applied.find(ch.table); it != applied.end() && !it->second.applied) {
      e.applied = false;
      e.not_applied_why = it->second.why.empty() ? "needs TorchRec/FBGEMM" : it->second.why;
    }
    if (auto it = recorded.find(ch.table); it != recorded.end()) {
      const model::TableView& t = *it->second;
      e.recorded_bytes = t.total_bytes();
      e.recorded_shape = fmt::format("{} x {} {}", t.rows, t.dim, t.dtype);
      if (ch.device_bytes)
        e.bytes_change = (static_cast<double>(t.total_bytes()) - static_cast<double>(ch.device_bytes)) /
                         static_cast<double>(ch.device_bytes);
    }
    // Judged: applied, recorded, and holding bytes of its own in the plan (a tied table's
    // weights are its owner's).
    if (!e.applied) e.note = "not applied (" + e.not_applied_why + ")";
    else if (!e.recorded_bytes) e.note = "not in the trial recording";
    else if (!e.bytes_change) e.note = e.strategy == "shared" ? "shares its owner's weights" : "no planned bytes";
    e.judged = e.note.empty();
    out.push_back(std::move(e));
  }
  return out;
}

// The verdict's one line and whether the plan held: a non-finite trial loss first, then the
// final loss against the baseline's, then each judged table's bytes.
void decide(PlanTrial& r, double max_loss_delta) {
  if (r.trial_loss.first_nonfinite) {
    r.verdict = fmt::format("the plan broke training at step {} (loss {})", r.trial_loss.first_nonfinite->step,
                            loss_text(r.trial_loss.first_nonfinite->loss));
    return;
  }
  if (r.loss_change && std::fabs(*r.loss_change) > max_loss_delta) {
    r.verdict = fmt::format("the plan's loss is off by {:.1f} % (limit {:.4g} %)", 100.0 * std::fabs(*r.loss_change),
                            100.0 * max_loss_delta);
    return;
  }
  const TrialTable* worst = nullptr;
  size_t judged = 0;
  for (const auto& t : r.tables) {
    if (!t.judged) continue;
    ++judged;
    if (std::fabs(*t.bytes_change) > kTrialBytesTolerance && (!worst || std::fabs(*t.bytes_change) > std::fabs(*worst->bytes_change)))
      worst = &t;
  }
  if (worst) {
    r.verdict = fmt::format("the plan's bytes are off by {:.1f} % for {}", 100.0 * std::fabs(*worst->bytes_change), worst->name);
    return;
  }
  std::string why = fmt::format("bytes within {:.0f} % for {} applied table(s)", 100.0 * kTrialBytesTolerance, judged);
  if (r.trial_loss.count == 0) why += ", no loss recorded in the trial";
  else why += fmt::format(", {} finite loss(es)", r.trial_loss.count);
  if (r.loss_change)
    why += fmt::format(", final loss {} vs {} ({:+.1f} %, limit {:.4g} %)", loss_text(r.trial_loss.final_loss),
                       loss_text(r.baseline_loss.final_loss), 100.0 * *r.loss_change, 100.0 * max_loss_delta);
  else why += ", loss not compared";
  r.held = true;
  r.verdict = "the plan held (" + why + ")";
}

// The final losses compared, or a note saying why they are not.
void compare_losses(PlanTrial& r) {
  if (!r.has_baseline) {
    r.notes.push_back("no baseline recording: the loss comparison needs one (edo diff --plan PLAN TRIAL BASELINE); "
                      "judged on bytes and finite losses only");
    return;
  }
  if (r.trial_loss.count == 0 || r.baseline_loss.count == 0) {
    r.notes.push_back(fmt::format("no loss recorded in the {}: the losses are not compared",
                                  r.trial_loss.count == 0 && r.baseline_loss.count == 0 ? "trial nor the baseline"
                                  : r.trial_loss.count == 0                             ? "trial"
                                                                                        : "baseline"));
    return;
  }
  const double base = r.baseline_loss.final_loss, trial = r.trial_loss.final_loss;
  if (!std::isfinite(base)) {
    r.notes.push_back("the baseline's final loss is not finite: the losses are not compared");
    return;
  }
  if (!std::isfinite(trial)) return;  // a non-finite trial loss is the verdict
  r.loss_change = base != 0 ? (trial - base) / std::fabs(base) : (trial == 0 ? 0.0 : HUGE_VAL);
}

model::LossSummary losses_of(const model::Profile& p) {
  const model::Session* s = model::loss_session(p);
  return model::summarize_losses(s ? s->losses : std::vector<model::StepLoss>{});
}

}  // namespace

std::string loss_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.4g}", v);
}

PlanTrial judge_plan_trial(const model::TuneResult& plan, const model::Profile& trial,
                           const std::vector<model::TableView>& trial_tables, const model::Profile* baseline,
                           double max_loss_delta) {
  PlanTrial r;
  r.tables = compare_tables(plan, trial_tables, applied_tables(trial, r.notes));
  r.has_baseline = baseline != nullptr;
  r.trial_loss = losses_of(trial);
  r.trial_step_s = model::seconds_per_step(trial);
  if (baseline) {
    r.baseline_loss = losses_of(*baseline);
    r.baseline_step_s = model::seconds_per_step(*baseline);
  }
  compare_losses(r);
  decide(r, max_loss_delta);
  return r;
}

}  // namespace edo::cli
