// The ranks of a distributed job in `edo report` (issue 22): the JSON "ranks" list and the
// text report's per-table imbalance lines.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "edo/model/rank_view.h"

namespace edo::cli {

// [{rank, world_size, local_rank, node, group_rank, pid, processes, lookups, lookups_by_table:
// {table: lookups}, peak_bytes, peak_from, steps, start_unix_ns, duration_s}]
nlohmann::ordered_json ranks_json(const std::vector<model::RankView>& ranks);
// "table: busiest rank 3 with 3300 lookups, 1.05x the mean of 3150 per rank": one per table
// read by some rank, most unbalanced first (empty with fewer than two ranks).
std::vector<std::string> imbalance_lines(const std::vector<model::TableImbalance>& imbalance);

}  // namespace edo::cli
