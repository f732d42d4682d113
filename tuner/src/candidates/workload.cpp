#include "workload.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "edo/dtype.h"
#include "edo/model/profile_summary.h"
#include "edo/text/glob.h"
#include "edo/tuner/tuner.h"

namespace edo::tuner {

std::string optimizer_of(const std::map<std::string, uint64_t>& extra_by_kind) {
  for (const auto& [kind, bytes] : extra_by_kind) {
    if (bytes == 0 || model::is_gradient_kind(kind)) continue;
    const auto dot = kind.find('.');
    return dot == std::string::npos ? kind : kind.substr(0, dot);
  }
  return "";
}

namespace {

// The snapshot of the group's weights: one of its names, the shape and dtype it was recorded
// with, the most rows if several processes sent one.
const model::WeightSnapshot* snapshot_of(const TableGroup& g, const std::vector<model::WeightSnapshot>& snaps,
                                         std::vector<std::string>& notes) {
  const model::WeightSnapshot* best = nullptr;
  for (const auto& s : snaps) {
    const bool ours = s.table == g.name || std::find(g.members.begin(), g.members.end(), s.table) != g.members.end();
    if (!ours) continue;
    if (s.dim != g.dim || s.table_rows != g.rows || !s.consistent() || model::dtype_size(s.dtype) == 0) {
      notes.push_back("weight snapshot of " + g.name + " does not match the table's shape: not used");
      continue;
    }
    const auto dt = parse_dtype(s.dtype);
    if (!dt || (*dt != DType::Fp32 && *dt != DType::Fp16 && *dt != DType::Bf16)) {
      notes.push_back("weight snapshot of " + g.name + " is " + s.dtype + " (already quantised): synthetic weights used");
      continue;
    }
    if (!best || s.rows.size() > best->rows.size()) best = &s;
  }
  return best;
}

// Two untied tables of one shape and dtype whose snapshots agree on every row both hold (at
// least 16 rows in common: the hot rows of tables read alike) hold the same weights.
bool identical_weights(const TableGroup& a, const TableGroup& b) {
  if (!a.snapshot || !b.snapshot || a.rows != b.rows || a.dim != b.dim || a.dtype != b.dtype) return false;
  const model::WeightSnapshot &x = *a.snapshot, &y = *b.snapshot;
  if (x.dtype != y.dtype) return false;
  const size_t row_bytes = x.values.size() / std::max<size_t>(1, x.rows.size());
  std::map<uint64_t, size_t> at;
  for (size_t i = 0; i < x.rows.size(); ++i) at[x.rows[i]] = i;
  size_t common = 0;
  for (size_t j = 0; j < y.rows.size(); ++j) {
    auto it = at.find(y.rows[j]);
    if (it == at.end()) continue;
    if (x.values.compare(it->second * row_bytes, row_bytes, y.values, j * row_bytes, row_bytes) != 0) return false;
    ++common;
  }
  return common >= 16;
}

// Groups with identical weights become one group: the first keeps its name, the others join
// as members that may share its weights.
void merge_identical(Workload& w) {
  // Only tables with snapshots can be identical: without any, no pairs to compare (10,000
  // tables are 50 million pairs).
  if (std::none_of(w.groups.begin(), w.groups.end(), [](const TableGroup& g) { return g.snapshot != nullptr; })) return;
  std::vector<char> gone(w.groups.size(), 0);
  for (size_t i = 0; i < w.groups.size(); ++i) {
    if (gone[i] || !w.groups[i].tuned) continue;
    for (size_t j = i + 1; j < w.groups.size(); ++j) {
      if (gone[j] || !w.groups[j].tuned || !w.groups[j].members.empty() || !identical_weights(w.groups[i], w.groups[j])) continue;
      TableGroup& g = w.groups[i];
      TableGroup& o = w.groups[j];
      if (!g.counts.merge(o.counts)) continue;
      g.summary = stats::summarize(g.counts);
      g.members.push_back(o.name);
      for (auto& c : o.first_seen) g.first_seen.push_back(std::move(c));
      if (g.dense_use.empty()) g.dense_use = o.dense_use;
      if (!g.optimizer_params) g.optimizer_params = o.optimizer_params;
      g.identical.push_back(o.name);
      g.identical_bytes += o.weight_bytes;
      g.optimizer_bytes += o.optimizer_bytes;
      g.grad_bytes += o.grad_bytes;
      g.lookups_per_step += o.lookups_per_step;
      g.lookups_by_name.insert(g.lookups_by_name.end(), o.lookups_by_name.begin(), o.lookups_by_name.end());
      w.notes.push_back(o.name + " holds the same weights as " + g.name + " (snapshot rows compared): tuned together, sharing one copy is a candidate");
      gone[j] = 1;
    }
  }
  std::vector<TableGroup> kept;
  for (size_t i = 0; i < w.groups.size(); ++i)
    if (!gone[i]) kept.push_back(std::move(w.groups[i]));
  w.groups = std::move(kept);
}

// Each session's table `name` is one stream of `g` (a curve that does not cover the table's
// lookups there cannot score them: an empty curve); its dense use and optimizer are g's too.
// `sessions_of`: each name's tables in profile.tables (one per session), so that grouping
// 10,000 tables is not 10,000 walks over every table.
void add_sessions_of(TableGroup& g, const model::Profile& profile, const std::string& name,
                     const std::map<std::string, std::vector<size_t>>& sessions_of) {
  const auto found = sessions_of.find(name);
  if (found == sessions_of.end()) return;
  for (size_t ti : found->second) {
    const auto& t = profile.tables[ti];
    uint64_t covered = 0;
    for (const auto& s : t.first_seen) covered += s.lookups;  // a row's lookups sit where it was first read
    g.first_seen.push_back(covered == t.aggregate.lookups() ? t.first_seen : model::FirstSeenCurve{});
    if (g.dense_use.empty()) g.dense_use = t.dense_use;
    if (!g.optimizer_params) g.optimizer_params = t.optimizer_params;
  }
}

}  // namespace

model::HeldOut held_out_of(const TableGroup& g) {
  model::HeldOut sum;
  for (const auto& c : g.first_seen) {
    uint64_t lookups = 0;
    for (const auto& s : c) lookups += s.lookups;
    const model::HeldOut h = model::held_out_split(c, lookups);
    if (!h.valid) return model::HeldOut{};
    sum.fit_lookups += h.fit_lookups;
    sum.held_out_lookups += h.held_out_lookups;
    sum.lost += h.lost;
    sum.rows_first_read_after += h.rows_first_read_after;
  }
  sum.valid = sum.held_out_lookups > 0;
  return sum;
}

Workload build_workload(const model::Profile& profile, const std::vector<model::WeightSnapshot>& snapshots,
                        const std::string& glob) {
  Workload w;
  for (const auto& s : profile.sessions) w.steps += static_cast<double>(s.steps);
  const auto views = model::table_views(profile);
  std::map<std::string, size_t> group_of;
  std::map<std::string, std::vector<size_t>> sessions_of;
  for (size_t ti = 0; ti < profile.tables.size(); ++ti) sessions_of[profile.tables[ti].name].push_back(ti);
  std::map<std::string, std::map<std::string, uint64_t>> kinds;  // by table name, max over sessions
  for (const auto& t : profile.tables)
    for (const auto& [k, v] : t.extra_by_kind) kinds[t.name][k] = std::max(kinds[t.name][k], v);
  for (const auto& v : views) {
    if (!v.shares_weights_of.empty()) continue;
    TableGroup g;
    g.name = v.name;
    g.rows = v.rows;
    g.dim = v.dim;
    g.dtype = v.dtype;
    g.weight_bytes = v.weight_bytes;
    g.optimizer_bytes = v.optimizer_bytes;
    g.grad_bytes = v.grad_bytes;
    g.optimizer = optimizer_of(kinds[v.name]);
    g.counts = v.aggregate;
    g.summary = v.summary;
    g.lookups_by_name.emplace_back(v.name, static_cast<double>(v.aggregate.lookups()));
    g.tuned = glob_match(glob, v.name);
    add_sessions_of(g, profile, v.name, sessions_of);
    group_of[v.name] = w.groups.size();
    w.groups.push_back(std::move(g));
  }
  for (const auto& v : views) {
    if (v.shares_weights_of.empty()) continue;
    auto it = group_of.find(v.shares_weights_of);
    if (it == group_of.end()) continue;
    TableGroup& g = w.groups[it->second];
    g.members.push_back(v.name);
    add_sessions_of(g, profile, v.name, sessions_of);
    g.optimizer_bytes += v.optimizer_bytes;
    g.grad_bytes += v.grad_bytes;
    if (g.optimizer.empty()) g.optimizer = optimizer_of(kinds[v.name]);
    g.lookups_by_name.emplace_back(v.name, static_cast<double>(v.aggregate.lookups()));
    if (v.rows != g.rows || !g.counts.merge(v.aggregate))
      w.notes.push_back("lookups of " + v.name + " could not be merged with " + g.name + "'s (other shape or count mode)");
    else
      g.summary = stats::summarize(g.counts);
    g.tuned = g.tuned || glob_match(glob, v.name);
  }
  // Lookups per step: the recording's steps (edo_step, optimizer.step); without any, one step
  // is every lookup of the recording divided by as many 65536-lookup batches as its busiest
  // table read (the default batch of `edo synth`).
  double busiest = 0;
  for (const auto& g : w.groups) busiest = std::max(busiest, static_cast<double>(g.counts.lookups()));
  if (w.steps <= 0) {
    w.steps = std::max(1.0, std::ceil(busiest / 65536.0));
    w.notes.push_back("no steps recorded: a step is taken as 1/" + std::to_string(static_cast<uint64_t>(w.steps)) +
                      " of the recording's lookups");
  }
  for (auto& g : w.groups) {
    g.lookups_per_step = static_cast<double>(g.counts.lookups()) / w.steps;
    for (auto& [name, n] : g.lookups_by_name) n /= w.steps;
    g.snapshot = snapshot_of(g, snapshots, w.notes);
  }
  merge_identical(w);
  std::stable_sort(w.groups.begin(), w.groups.end(), [](const TableGroup& a, const TableGroup& b) {
    return a.recorded_device_bytes() > b.recorded_device_bytes();
  });
  return w;
}

}  // namespace edo::tuner
