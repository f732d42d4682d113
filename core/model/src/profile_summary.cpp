#include "edo/model/profile_summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string_view>
#include <utility>

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
        v.optimizer_bytes = std::max(v.optimizer_bytes, t.optimizer_bytes);
        v.grad_bytes = std::max(v.grad_bytes, t.grad_bytes);
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
    v.weight_bytes = t.weight_bytes;
    v.optimizer_bytes = t.optimizer_bytes;
    v.grad_bytes = t.grad_bytes;
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
  // Largest first; a table sharing another's weights right after that table (its own bytes
  // are only its optimizer state and gradients); equal sizes in natural name order.
  std::map<std::string, uint64_t> total_of;
  for (const TableView& v : views) total_of[v.name] = v.total_bytes();
  auto key = [&](const TableView& v) {
    if (v.shares_weights_of.empty()) return std::make_pair(v.total_bytes(), std::string_view(v.name));
    auto it = total_of.find(v.shares_weights_of);
    return it == total_of.end() ? std::make_pair(v.total_bytes(), std::string_view(v.name))
                                : std::make_pair(it->second, std::string_view(it->first));
  };
  std::stable_sort(views.begin(), views.end(), [&](const TableView& a, const TableView& b) {
    const auto ka = key(a), kb = key(b);
    if (ka.first != kb.first) return ka.first > kb.first;
    if (ka.second != kb.second) return natural_less(ka.second, kb.second);
    if (a.shares_weights_of.empty() != b.shares_weights_of.empty()) return a.shares_weights_of.empty();
    return natural_less(a.name, b.name);
  });
  return views;
}

bool natural_less(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      // Compare the two digit runs as numbers: skip leading zeros, then the longer run is larger.
      size_t ei = i, ej = j;
      while (ei < a.size() && digit(a[ei])) ++ei;
      while (ej < b.size() && digit(b[ej])) ++ej;
      size_t zi = i, zj = j;
      while (zi + 1 < ei && a[zi] == '0') ++zi;
      while (zj + 1 < ej && b[zj] == '0') ++zj;
      const std::string_view na = a.substr(zi, ei - zi), nb = b.substr(zj, ej - zj);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      if (ei - i != ej - j) return ei - i < ej - j;  // "01" after "1": fewer leading zeros first
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
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
