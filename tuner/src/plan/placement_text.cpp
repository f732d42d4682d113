// placement_lines() (edo/tuner/summary.h): a plan over several devices in words.
#include <cstdio>
#include <string>
#include <vector>

#include "edo/model/profile_summary.h"
#include "edo/tuner/placement.h"
#include "edo/tuner/summary.h"

namespace edo::tuner {
namespace {

std::string lookups_text(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g lookups/step", v);
  return buf;
}

}  // namespace

std::vector<std::string> placement_lines(const model::TuneResult& r) {
  std::vector<std::string> out;
  const auto loads = device_loads(r);
  if (loads.empty()) return out;
  out.push_back("placement over " + std::to_string(r.devices) + " devices of " + model::format_bytes(r.budget_bytes) +
                " each (bytes and measured lookups balanced; no communication model):");
  for (const auto& d : loads)
    out.push_back("  device " + std::to_string(d.device) + ": " + model::format_bytes(d.device_bytes) + ", " +
                  lookups_text(d.lookups_per_step));
  for (const auto& ch : r.choices) {
    if (ch.shards.empty()) continue;
    std::string line = "  " + ch.table + ": " + ch.sharding;
    if (!ch.shares_with.empty() && ch.device_bytes == 0) line += " (follows " + ch.shares_with + ")";
    if (ch.sharding == "table_wise") {
      line += " on device " + std::to_string(ch.shards[0].device);
    } else {
      const char* unit = ch.sharding == "column_wise" ? "columns" : "rows";
      line += " over devices";
      for (size_t i = 0; i < ch.shards.size(); ++i) {
        const auto& s = ch.shards[i];
        line += (i ? "; " : " ") + std::to_string(s.device) + " (" + unit + " " + std::to_string(s.offset) + "-" +
                std::to_string(s.offset + s.size - (s.size ? 1 : 0)) + ", " + model::format_bytes(s.device_bytes) + ")";
      }
    }
    out.push_back(line);
  }
  return out;
}

}  // namespace edo::tuner
