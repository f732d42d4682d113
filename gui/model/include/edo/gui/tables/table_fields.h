// The few facts about a table that the dashboard shows, read through one place so that a
// change in how the profile model stores them touches this file only.
#pragma once

#include <cstdint>
#include <string>

#include "edo/model/profile_summary.h"

namespace edo::gui {

// The table's memory in the profile model's named parts (`edo report --json` prints the same).
inline uint64_t weight_bytes(const model::TableView& t) { return t.weight_bytes; }
inline uint64_t optimizer_bytes(const model::TableView& t) { return t.optimizer_bytes; }
inline uint64_t grad_bytes(const model::TableView& t) { return t.grad_bytes; }
// What the table adds to memory: weights (counted with the owner when tied) + optimizer + grads.
inline uint64_t total_bytes(const model::TableView& t) { return t.total_bytes(); }
inline bool shares_weights(const model::TableView& t) { return !t.shares_weights_of.empty(); }
// Bytes of one row of weights (what one cached row costs).
inline uint64_t row_bytes(const model::TableView& t) {
  const uint64_t element = model::dtype_size(t.dtype);
  if (element) return element * t.dim;
  return t.rows ? t.weight_bytes / t.rows : 0;
}
inline uint64_t lookups(const model::TableView& t) { return t.summary.lookups; }
inline bool is_sketched(const model::TableView& t) { return t.summary.mode == stats::CountMode::kSketch; }

}  // namespace edo::gui
