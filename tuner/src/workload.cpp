#include "workload.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "edo/dtype.h"
#include "edo/model/profile_summary.h"
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

}  // namespace

Workload build_workload(const model::Profile& profile, const std::vector<model::WeightSnapshot>& snapshots,
                        const std::string& glob) {
  Workload w;
  for (const auto& s : profile.sessions) w.steps += static_cast<double>(s.steps);
  const auto views = model::table_views(profile);
  std::map<std::string, size_t> group_of;
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
    group_of[v.name] = w.groups.size();
    w.groups.push_back(std::move(g));
  }
  for (const auto& v : views) {
    if (v.shares_weights_of.empty()) continue;
    auto it = group_of.find(v.shares_weights_of);
    if (it == group_of.end()) continue;
    TableGroup& g = w.groups[it->second];
    g.members.push_back(v.name);
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
  std::stable_sort(w.groups.begin(), w.groups.end(), [](const TableGroup& a, const TableGroup& b) {
    return a.recorded_device_bytes() > b.recorded_device_bytes();
  });
  return w;
}

}  // namespace edo::tuner
