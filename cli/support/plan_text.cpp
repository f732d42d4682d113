#include "support/plan_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "edo/model/profile_summary.h"
#include "edo/tuner/duration.h"
#include "support/terminal.h"

namespace edo::cli {

namespace {

std::string us(double v) { return tuner::format_duration_us(v); }

std::string change(double before, double after) {
  if (!(before > 0)) return "";
  return fmt::format(" ({:+.1f}%)", 100.0 * (after - before) / before);
}

}  // namespace

std::string plan_text(const model::TuneResult& r) {
  std::string out;
  out += fmt::format("measured on: {} ({})\n", r.backend == "cuda" ? "GPU" : "CPU", terminal_safe(r.device));
  out += fmt::format("weights: {}; {} of {} candidates measured in {:.0f} s{}\n", r.weights, r.candidates_measured,
                     r.candidates_total, r.elapsed_s,
                     r.complete ? "" : fmt::format(" (stopped: {})", r.stop_reason.empty() ? "early" : terminal_safe(r.stop_reason)));
  out += fmt::format("budget: {}{}\n", model::format_bytes(r.budget_bytes),
                     std::isfinite(r.max_error) ? fmt::format(", max error {:.3g} per table", r.max_error) : "");
  for (const auto& n : r.notes) out += "note: " + terminal_safe(n) + "\n";
  out += fmt::format("baseline: {} device, {} per step\n", model::format_bytes(r.baseline_device_bytes), us(r.baseline_step_us));
  if (!r.feasible) {
    out += r.min_feasible_bytes == UINT64_MAX
               ? std::string("plan: none (no candidate of some table was measured within the error limit)\n")
               : fmt::format("plan: none fits; the smallest feasible budget is {}\n", model::format_bytes(r.min_feasible_bytes));
    return out;
  }
  const double saved = static_cast<double>(r.baseline_device_bytes) - static_cast<double>(r.plan_device_bytes);
  out += fmt::format("plan: {} device{}, {} host, {} per step{}; {} {}\n", model::format_bytes(r.plan_device_bytes),
                     change(static_cast<double>(r.baseline_device_bytes), static_cast<double>(r.plan_device_bytes)),
                     model::format_bytes(r.plan_host_bytes), us(r.plan_step_us), change(r.baseline_step_us, r.plan_step_us),
                     saved >= 0 ? "saves" : "adds", model::format_bytes(static_cast<uint64_t>(std::fabs(saved))));
  size_t width = 5;
  std::vector<std::string> names;
  for (const auto& c : r.choices) {
    names.push_back(terminal_safe(c.table));
    width = std::max(width, display_width(names.back()));
  }
  width = std::min<size_t>(width, 40);
  out += fmt::format("\n{} {:<10} {:>11} {:>11} {:>10} {:>8} {:>6}  {}\n", pad_right("TABLE", width), "STRATEGY", "DEVICE",
                     "HOST", "STEP", "ERROR", "HIT", "WHY");
  for (size_t i = 0; i < r.choices.size(); ++i) {
    const auto& ch = r.choices[i];
    const model::TuneCandidate* c =
        ch.candidate >= 0 && static_cast<size_t>(ch.candidate) < r.candidates.size() ? &r.candidates[static_cast<size_t>(ch.candidate)] : nullptr;
    std::string name = names[i];
    if (display_width(name) > width) {
      out += name + "\n";
      name.clear();
    }
    const std::string strategy = !ch.shares_with.empty() ? "shared" : c ? terminal_safe(c->strategy) : "unchanged";
    out += fmt::format("{} {:<10} {:>11} {:>11} {:>10} {:>8} {:>6}  {}\n", pad_right(name, width), strategy,
                       model::format_bytes(ch.device_bytes), model::format_bytes(ch.host_bytes), c ? us(ch.step_us) : "-",
                       c && std::isfinite(c->error) ? fmt::format("{:.3g}", c->error) : "-",
                       c && c->hit_rate ? fmt::format("{:.0f}%", 100.0 * *c->hit_rate) : "-", terminal_safe(ch.why));
  }
  return out;
}

}  // namespace edo::cli
