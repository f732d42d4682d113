#include "support/plan/plan_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "edo/model/profile_summary.h"
#include "edo/text/duration.h"
#include "edo/tuner/summary.h"
#include "support/terminal.h"

namespace edo::cli {

namespace {

std::string us(double v) { return edo::format_duration_us(v); }

}  // namespace

std::string plan_text(const model::TuneResult& r) {
  std::string out;
  for (const auto& line : tuner::summary_lines(r)) out += terminal_safe(line) + "\n";
  if (!r.feasible) return out;
  size_t width = 5;
  std::vector<std::string> names;
  for (const auto& c : r.choices) {
    names.push_back(terminal_safe(c.table));
    width = std::max(width, display_width(names.back()));
  }
  width = std::min<size_t>(width, 40);
  // The whole change each choice makes (tuner::strategy_label: format, training precision,
  // optimizer): the column is as wide as the longest.
  std::vector<std::string> labels;
  size_t label_width = 10;
  for (const auto& ch : r.choices) {
    const model::TuneCandidate* c =
        ch.candidate >= 0 && static_cast<size_t>(ch.candidate) < r.candidates.size() ? &r.candidates[static_cast<size_t>(ch.candidate)] : nullptr;
    labels.push_back(!ch.shares_with.empty() ? "shared" : c ? terminal_safe(tuner::strategy_label(r, *c)) : "unchanged");
    label_width = std::max(label_width, display_width(labels.back()));
  }
  // A plan with a table off the device tier (model::tier_of) shows each table's tier and its
  // bytes on the SSD; other plans keep their columns.
  bool tiers = false;
  for (const auto& ch : r.choices)
    if (ch.candidate >= 0 && static_cast<size_t>(ch.candidate) < r.candidates.size())
      tiers = tiers || model::tier_of(r.candidates[static_cast<size_t>(ch.candidate)]) != "device";
  auto tier_cells = [&](const model::TuneChoice& ch, const model::TuneCandidate* c) {
    return tiers ? fmt::format(" {:<6} {:>11}", c ? std::string(model::tier_of(*c)) : "device", model::format_bytes(ch.ssd_bytes)) : "";
  };
  out += fmt::format("\n{} {}{} {:>11} {:>11} {:>10} {:>8} {:>6}  {}\n", pad_right("TABLE", width), pad_right("STRATEGY", label_width),
                     tiers ? fmt::format(" {:<6} {:>11}", "TIER", "SSD") : "", "DEVICE", "HOST", "STEP", "ERROR", "HIT", "WHY");
  for (size_t i = 0; i < r.choices.size(); ++i) {
    const auto& ch = r.choices[i];
    const model::TuneCandidate* c =
        ch.candidate >= 0 && static_cast<size_t>(ch.candidate) < r.candidates.size() ? &r.candidates[static_cast<size_t>(ch.candidate)] : nullptr;
    std::string name = names[i];
    if (display_width(name) > width) {
      out += name + "\n";
      name.clear();
    }
    out += fmt::format("{} {}{} {:>11} {:>11} {:>10} {:>8} {:>6}  {}\n", pad_right(name, width), pad_right(labels[i], label_width),
                       tier_cells(ch, c), model::format_bytes(ch.device_bytes), model::format_bytes(ch.host_bytes), c ? us(ch.step_us) : "-",
                       c ? tuner::error_text(*c) : "-",
                       c && c->hit_rate ? fmt::format("{:.0f}%", 100.0 * *c->hit_rate) : "-", terminal_safe(ch.why));
  }
  // Over several devices: each device's totals and each table's place.
  const auto placement = tuner::placement_lines(r);
  if (!placement.empty()) out += "\n";
  for (const auto& line : placement) out += terminal_safe(line) + "\n";
  return out;
}

}  // namespace edo::cli
