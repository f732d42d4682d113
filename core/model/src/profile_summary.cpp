#include "edo/model/profile_summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace edo::model {

std::vector<TableView> table_views(const Profile& profile) {
  std::vector<TableView> views;
  std::map<std::string, size_t> by_name;
  for (const Table& t : profile.tables) {
    std::string key = t.name;
    auto it = by_name.find(key);
    if (it != by_name.end()) {
      TableView& v = views[it->second];
      if (v.rows == t.rows && v.dim == t.dim && v.aggregate.merge(t.aggregate)) {
        v.sessions += 1;
        v.extra_bytes = std::max(v.extra_bytes, t.extra_bytes);
        continue;
      }
      // Same name, other shape: keep both, told apart by the process that recorded it.
      key = t.name + " (session " + std::to_string(t.session_id) + ")";
    }
    TableView v;
    v.name = key;
    v.rows = t.rows;
    v.dim = t.dim;
    v.dtype = t.dtype;
    v.device = t.device;
    v.bytes = t.bytes;
    v.extra_bytes = t.extra_bytes;
    v.sessions = 1;
    v.aggregate = t.aggregate;
    by_name[key] = views.size();
    views.push_back(std::move(v));
  }
  std::map<std::string, std::set<std::string>> tied;
  std::map<std::string, std::string> owner;
  for (const Tie& tie : profile.ties) {
    tied[tie.table].insert(tie.tied_with);
    tied[tie.tied_with].insert(tie.table);
    owner.emplace(tie.tied_with, tie.table);
  }
  for (TableView& v : views) {
    v.summary = stats::summarize(v.aggregate);
    auto it = tied.find(v.name);
    if (it != tied.end()) v.tied_with.assign(it->second.begin(), it->second.end());
    auto own = owner.find(v.name);
    if (own != owner.end()) v.shares_weights_of = own->second;
  }
  std::stable_sort(views.begin(), views.end(), [](const TableView& a, const TableView& b) {
    if (a.bytes + a.extra_bytes != b.bytes + b.extra_bytes) return a.bytes + a.extra_bytes > b.bytes + b.extra_bytes;
    return a.name < b.name;
  });
  return views;
}

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  if (unit == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.2f %s", value, units[unit]);
  return buf;
}

}  // namespace edo::model
