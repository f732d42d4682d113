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

uint64_t activation_rows_per_step(const TableGroup& g) {
  if (!g.activation || g.dim == 0) return 0;
  const uint64_t element = model::dtype_size(g.activation->dtype.empty() ? g.dtype : g.activation->dtype);
  return element ? g.activation->output_bytes / (static_cast<uint64_t>(g.dim) * element) : 0;
}

uint64_t lowrank_activation_bytes(const TableGroup& g, uint32_t rank) {
  const uint64_t rows = activation_rows_per_step(g);
  if (rows == 0) return 0;
  const uint64_t element = model::dtype_size(g.activation->dtype.empty() ? g.dtype : g.activation->dtype);
  return rows * rank * element * (g.activation->grad_bytes > 0 ? 2 : 1);
}

}  // namespace edo::tuner
