#include "activation_notes.h"

#include "edo/model/profile_summary.h"
#include "edo/tuner/llm_facts.h"

namespace edo::tuner {

std::vector<std::string> checkpointing_notes(const model::Profile& profile, const model::TuneResult& r) {
  std::vector<std::string> out;
  for (const auto& t : r.tables) {
    const auto a = activation_of(profile, t.name);
    if (!a || a->grad_bytes == 0 || a->output_bytes == 0) continue;  // inference: nothing kept for backward
    uint64_t best = 0;
    std::string best_strategy;
    for (const auto& c : r.candidates) {
      if (c.table != t.name || !c.usable() || !c.rejected.empty() || !(c.error <= r.max_error)) continue;
      if (c.device_bytes < t.device_bytes && t.device_bytes - c.device_bytes > best) {
        best = t.device_bytes - c.device_bytes;
        best_strategy = c.strategy;
      }
    }
    // The output kept for the backward pass is what recomputing it frees; its gradient exists
    // during the backward pass either way.
    if (a->output_bytes <= best) continue;
    out.push_back(t.name + ": recomputing its lookups' output in the backward pass (activation checkpointing) would free " +
                  model::format_bytes(a->output_bytes) + " per step, more than the best format change measured (" +
                  (best_strategy.empty() ? std::string("none saves memory") : model::format_bytes(best) + ", " + best_strategy) + ")");
  }
  return out;
}

}  // namespace edo::tuner
