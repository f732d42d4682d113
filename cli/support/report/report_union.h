// The model-parallel (union) LRU curve of tables read on several ranks in `edo report`
// (issue 22): the JSON "lru_union" of a table and the text report's lines.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "edo/model/profile_summary.h"

namespace edo::cli {

// Two curves differ where some cache size's hit rates are more than this apart (0.5 points).
inline constexpr double kUnionDiffers = 0.005;

// The largest difference between the union curve and the per-rank curve (same cache sizes).
double union_difference(const model::TableView& t);

// null when fewer than two ranks read the table; else {available, why_not (when not),
// estimated_from, assumption, ranks, rate, stratified, lookups, sampled_refs, lru_hit_rate:
// [[rows, rate]], lru_hit_rate_at: {1pct, 10pct, 50pct, 100pct}, differs, max_difference}.
nlohmann::ordered_json union_lru_json(const model::TableView& t);

// One line per table read on several ranks: its union LRU 1 % and 10 % against the per-rank
// ones when the curves differ, "within 0.5 points" when not, or why it is unavailable.
std::vector<std::string> union_lru_lines(const std::vector<model::TableView>& tables);

}  // namespace edo::cli
