#include "edo/model/profile_summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string_view>
#include <utility>

namespace edo::model {

namespace {

// Adds table t into view v when they are one table seen by several processes (same shape,
// mergeable counts). A process that only inherited the table and never read it sent no counts.
bool merge_into(TableView& v, const Table& t) {
  if (v.rows != t.rows || v.dim != t.dim || v.dtype != t.dtype) return false;
  if (!t.aggregate.empty()) {
    if (v.aggregate.empty()) v.aggregate = t.aggregate;
    else if (!v.aggregate.merge(t.aggregate)) return false;
  }
  v.sessions += 1;
  if (!v.optimizer_params) v.optimizer_params = t.optimizer_params;
  if (v.dense_use.empty()) v.dense_use = t.dense_use;
  v.optimizer_bytes = std::max(v.optimizer_bytes, t.optimizer_bytes);
  v.grad_bytes = std::max(v.grad_bytes, t.grad_bytes);
  return true;
}

}  // namespace

std::vector<TableView> table_views(const Profile& profile) { return table_views(profile, {}); }

std::vector<TableView> table_views(const Profile& profile, const std::function<void(size_t, size_t)>& on_table,
                                   std::vector<std::string>* view_of_table, SummaryDetail detail) {
  if (view_of_table) view_of_table->clear();
  std::map<int64_t, const Session*> session_of;
  for (const Session& s : profile.sessions) session_of[s.id] = &s;
  std::vector<TableView> views;
  std::map<std::string, size_t> by_name;
  for (const Table& t : profile.tables) {
    // Same name, other shape (or counts that cannot merge): told apart by the rank, else the
    // pid, of the process that recorded it.
    const Session* s = session_of.count(t.session_id) ? session_of[t.session_id] : nullptr;
    std::vector<std::string> keys{t.name};
    if (s && s->rank) keys.push_back(t.name + " (rank " + std::to_string(*s->rank) + ")");
    if (s) keys.push_back(t.name + " (" + (s->rank ? "rank " + std::to_string(*s->rank) + ", " : std::string()) + "pid " +
                          std::to_string(s->pid) + ")");
    keys.push_back(t.name + " (session " + std::to_string(t.session_id) + ")");
    bool merged = false;
    std::string key;
    for (const std::string& k : keys) {
      auto it = by_name.find(k);
      if (it == by_name.end()) {
        key = k;
        break;
      }
      if (merge_into(views[it->second], t)) {
        if (s && s->rank) views[it->second].ranks.insert(*s->rank);
        if (view_of_table) view_of_table->push_back(k);
        merged = true;
        break;
      }
    }
    if (merged) continue;
    if (key.empty()) key = keys.back() + " #" + std::to_string(views.size());
    if (view_of_table) view_of_table->push_back(key);
    TableView v;
    v.name = key;
    v.table_name = t.name;
    v.rows = t.rows;
    v.dim = t.dim;
    v.dtype = t.dtype;
    v.device = t.device;
    v.weight_bytes = t.weight_bytes;
    v.optimizer_bytes = t.optimizer_bytes;
    v.grad_bytes = t.grad_bytes;
    v.optimizer_params = t.optimizer_params;
    v.dense_use = t.dense_use;
    v.sessions = 1;
    if (s && s->rank) v.ranks.insert(*s->rank);
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
  // When one name stands for different tables, every one of them says whose it is.
  std::map<std::string, int> per_name;
  for (const TableView& v : views) per_name[v.table_name] += 1;
  for (TableView& v : views) {
    if (per_name[v.table_name] > 1 && v.name == v.table_name && v.ranks.size() == 1) {
      const std::string renamed = v.name + " (rank " + std::to_string(*v.ranks.begin()) + ")";
      if (view_of_table) std::replace(view_of_table->begin(), view_of_table->end(), v.name, renamed);
      v.name = renamed;
    }
  }
  size_t done = 0;
  for (TableView& v : views) {
    v.summary = detail == SummaryDetail::kHeadline ? stats::summarize_headline(v.aggregate) : stats::summarize(v.aggregate);
    if (on_table) on_table(++done, views.size());
    auto it = tied.find(v.table_name);
    if (it != tied.end()) v.tied_with.assign(it->second.begin(), it->second.end());
    auto own = owner.find(v.table_name);
    if (own != owner.end()) v.shares_weights_of = own->second;
  }
  // Largest first; a table sharing another's weights right after that table (its own bytes
  // are only its optimizer state and gradients); equal sizes in natural name order.
  std::map<std::string, uint64_t> total_of;
  for (const TableView& v : views) total_of.emplace(v.table_name, v.total_bytes());
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
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  if (unit == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.2f %s", value, units[unit]);
  return buf;
}

}  // namespace edo::model
