// The few facts about a table that the dashboard shows, read through one place so that a
// change in how the profile model stores them (e.g. bytes split by kind) touches this file only.
#pragma once

#include <cstdint>
#include <string>

#include "edo/model/profile_summary.h"

namespace edo::gui {

// The table's own weights, or 0 when they belong to a table it is tied to.
inline uint64_t weight_bytes(const model::TableView& t) { return t.shares_weights_of.empty() ? t.bytes : 0; }
// Memory the table owns besides its weights (optimizer moments, gradients).
inline uint64_t optimizer_bytes(const model::TableView& t) { return t.extra_bytes; }
// What the table costs in memory: its weights (counted once across ties) plus its extra state.
inline uint64_t total_bytes(const model::TableView& t) { return weight_bytes(t) + optimizer_bytes(t); }
// Bytes of one row of weights (what one cached row costs).
inline uint64_t row_bytes(const model::TableView& t) {
  const uint64_t element = model::dtype_size(t.dtype);
  if (element) return element * t.dim;
  return t.rows ? t.bytes / t.rows : 0;
}
// The bytes `edo diff` compares: weights plus extra state as recorded, ties not netted out.
inline uint64_t recorded_bytes(const model::TableView& t) { return t.bytes + t.extra_bytes; }
inline uint64_t lookups(const model::TableView& t) { return t.summary.lookups; }
inline bool is_sketched(const model::TableView& t) { return t.summary.mode == stats::CountMode::kSketch; }

}  // namespace edo::gui
