#include "support/report/report_ranks.h"

#include <fmt/format.h>

#include "support/terminal.h"

namespace edo::cli {

using json = nlohmann::ordered_json;

json ranks_json(const std::vector<model::RankView>& ranks) {
  json out = json::array();
  for (const auto& r : ranks) {
    json j;
    j["rank"] = r.rank;
    j["world_size"] = r.world_size ? json(*r.world_size) : json(nullptr);
    j["local_rank"] = r.local_rank ? json(*r.local_rank) : json(nullptr);
    j["node"] = r.node;
    j["group_rank"] = r.group_rank ? json(*r.group_rank) : json(nullptr);
    j["pid"] = r.pid;
    j["processes"] = r.processes;
    j["lookups"] = r.lookups;
    j["lookups_by_table"] = r.lookups_by_table;
    j["peak_bytes"] = r.peak_bytes;
    j["peak_from"] = r.peak_from_timeline ? "timeline" : "tables";
    j["steps"] = r.steps;
    j["start_unix_ns"] = r.start_unix_ns;
    j["duration_s"] = static_cast<double>(r.duration_ns) / 1e9;
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<std::string> imbalance_lines(const std::vector<model::TableImbalance>& imbalance) {
  std::vector<std::string> out;
  for (const auto& t : imbalance)
    out.push_back(fmt::format("{}: busiest rank {} with {} lookups, {:.2f}x the mean of {:.0f} per rank ({} of the ranks read it)",
                              terminal_safe(t.table), t.busiest_rank, t.busiest, t.ratio, t.mean, t.ranks));
  return out;
}

}  // namespace edo::cli
