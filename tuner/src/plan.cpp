// replan(): the plan from the measured candidates, for a budget, an error limit and the
// run's objective (docs/tuning.md "The plan"); over several devices, placement.cpp places it.
#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "edo/model/weights.h"
#include "edo/tuner/optimizer.h"
#include "edo/tuner/tuner.h"
#include "explain.h"
#include "placement_plan.h"

namespace edo::tuner {
namespace {

// The step times the plan ranks a table's options by: options whose measured intervals overlap
// are ties and rank at the same time. Walking the options fastest first, each one starts a tie
// group unless its interval reaches into the interval of the group's first (fastest) option;
// every member ranks at that option's time. Ties then go to the least loss, then the fewest
// bytes (the knapsack's order), so noise within the intervals cannot decide.
void rank_ties(std::vector<PlanOption>& options, const std::vector<model::TuneCandidate>& cands) {
  std::vector<size_t> order(options.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return options[a].step_us < options[b].step_us; });
  auto lo = [&](size_t i) {
    const double v = cands[options[i].id].step_us_lo;
    return std::isfinite(v) ? std::min(v, options[i].step_us) : options[i].step_us;
  };
  auto hi = [&](size_t i) {
    const double v = cands[options[i].id].step_us_hi;
    return std::isfinite(v) ? std::max(v, options[i].step_us) : options[i].step_us;
  };
  // A time without an interval is exact: modelled (a device model, or the CPU's offload: the
  // baseline's measured lookups plus a modelled transfer, so its difference from the baseline
  // and from the other cache sizes is exactly the transfer). It is compared exactly, never tied
  // by another option's noise: whether the baseline's interval happened to reach it would decide
  // the plan run by run (issue 29 point 8: a cache 40x larger in 2 of 5 runs).
  auto exact = [&](size_t i) {
    const auto& c = cands[options[i].id];
    return !std::isfinite(c.step_us_lo) || !std::isfinite(c.step_us_hi);
  };
  size_t leader = order.empty() ? 0 : order[0];
  double leader_us = order.empty() ? 0 : options[leader].step_us;
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t i = order[k];
    const bool apart = exact(i) != exact(leader) ? options[i].step_us != options[leader].step_us : lo(i) > hi(leader);
    if (k > 0 && apart) {
      leader = i;
      leader_us = options[i].step_us;
    }
    options[i].step_us = leader_us;
  }
}

}  // namespace

void replan(model::TuneResult& r, uint64_t budget, double max_error) {
  if (r.devices > 1) return replan_devices(r, budget, max_error);
  plan_total(r, budget, max_error);
}

void plan_total(model::TuneResult& r, uint64_t budget, double max_error) {
  r.budget_bytes = budget;
  r.max_error = max_error;
  r.choices.clear();
  r.frontier.clear();
  r.feasible = false;
  // One item per tuned owner with a measured baseline; the rest is fixed memory.
  std::vector<PlanItem> items, exact;  // ranked with ties (the choice), as measured (the frontier)
  std::vector<size_t> item_table;
  uint64_t fixed = 0;
  r.baseline_device_bytes = 0;
  r.baseline_host_bytes = 0;
  r.baseline_step_us = 0;
  std::map<std::string, const model::TuneCandidate*> baseline_of;
  for (const auto& c : r.candidates) baseline_of.emplace(c.table, &c);  // a table's first candidate is its baseline
  for (size_t ti = 0; ti < r.tables.size(); ++ti) {
    const model::TuneTable& t = r.tables[ti];
    if (!t.shares_with.empty()) continue;
    r.baseline_device_bytes += t.device_bytes;
    PlanItem item;
    if (t.tuned)
      for (size_t ci = 0; ci < r.candidates.size(); ++ci) {
        const auto& c = r.candidates[ci];
        if (c.table == t.name && c.plannable(r.allow_unvalidated) && c.error <= max_error)
          item.options.push_back({c.device_bytes, c.host_bytes, c.step_us, ci, candidate_loss(c, baseline_of.count(t.name) && baseline_of.at(t.name) == &c)});
      }
    auto base = baseline_of.find(t.name);
    const bool measured_baseline = t.tuned && base != baseline_of.end() && base->second->usable();
    if (!t.tuned || !measured_baseline) {
      fixed += t.device_bytes;
      continue;
    }
    r.baseline_step_us += base->second->step_us;
    r.baseline_host_bytes += base->second->host_bytes;
    exact.push_back(item);
    rank_ties(item.options, r.candidates);
    items.push_back(std::move(item));
    item_table.push_back(ti);
  }
  const uint64_t room = budget > fixed ? budget - fixed : 0;
  // The frontier (bytes vs measured step time) and the smallest feasible budget are the speed
  // objective's on the measured times; the plan is the run's objective's on the ranked ones.
  const Solution fastest = solve_plan(exact, room, size_t{1} << 14, Objective::kSpeed);
  const Solution sol =
      solve_plan(items, room, size_t{1} << 14, r.objective == "least-change" ? Objective::kLeastLoss : Objective::kSpeed);
  for (const auto& [b, us] : fastest.frontier) r.frontier.emplace_back(b + fixed, us);
  r.min_feasible_bytes = sol.min_feasible_bytes == UINT64_MAX ? UINT64_MAX : sol.min_feasible_bytes + fixed;
  if (!sol.feasible || fixed > budget) {
    r.plan_device_bytes = r.plan_host_bytes = 0;
    r.plan_step_us = 0;
    return;
  }
  r.feasible = true;
  r.plan_device_bytes = sol.device_bytes + fixed;
  r.plan_host_bytes = sol.host_bytes;
  // The plan's time is its choices' measured times (the knapsack ranked ties as equal).
  r.plan_step_us = 0;
  for (size_t id : sol.chosen) r.plan_step_us += r.candidates[id].step_us;
  std::map<std::string, size_t> chosen;  // owner -> candidate index
  for (size_t k = 0; k < items.size(); ++k) chosen[r.tables[item_table[k]].name] = sol.chosen[k];
  // Lookups per step of each group (owner and members), to split a group's time.
  std::map<std::string, double> group_lookups;
  for (const auto& t : r.tables) group_lookups[t.shares_with.empty() ? t.name : t.shares_with] += t.lookups_per_step;
  // Identical (untied) tables kept apart by the chosen candidate: owner -> their names.
  std::map<std::string, std::vector<std::string>> apart;
  for (const auto& [owner, ci] : chosen) {
    const auto p = nlohmann::json::parse(r.candidates[ci].params_json.empty() ? "{}" : r.candidates[ci].params_json, nullptr, false);
    if (p.is_object() && p.contains("apart_from") && p["apart_from"].is_array())
      for (const auto& n : p["apart_from"])
        if (n.is_string()) apart[owner].push_back(n.get<std::string>());
  }
  auto own_bytes = [&](const model::TuneTable& t) { return t.rows * t.dim * uint64_t{model::dtype_size(t.dtype)}; };
  for (const auto& t : r.tables) {
    model::TuneChoice ch;
    ch.table = t.name;
    ch.shares_with = t.shares_with;
    const std::string owner = t.shares_with.empty() ? t.name : t.shares_with;
    auto it = chosen.find(owner);
    if (it == chosen.end()) {
      ch.device_bytes = t.device_bytes;
      ch.why = !t.tuned ? "not tuned (outside --tables or not encodable): kept as recorded"
                        : "kept as recorded: its baseline was not measured (stopped early)";
      if (!t.shares_with.empty()) ch.why = "tied to " + t.shares_with + ": shares its weights, kept as recorded";
      r.choices.push_back(std::move(ch));
      continue;
    }
    const model::TuneCandidate& c = r.candidates[it->second];
    ch.candidate = static_cast<int64_t>(it->second);
    const double share = group_lookups[owner] > 0 ? t.lookups_per_step / group_lookups[owner]
                                                  : (t.shares_with.empty() ? 1.0 : 0.0);
    ch.step_us = c.step_us * share;
    const auto& kept_apart = apart[owner];
    const bool is_apart = std::find(kept_apart.begin(), kept_apart.end(), t.name) != kept_apart.end();
    if (t.shares_with.empty()) {
      uint64_t members = 0;
      for (const auto& tt : r.tables)
        if (std::find(kept_apart.begin(), kept_apart.end(), tt.name) != kept_apart.end()) members += own_bytes(tt);
      ch.device_bytes = c.device_bytes - std::min(c.device_bytes, members);
      ch.host_bytes = c.host_bytes;
      auto b = baseline_of.find(owner);
      ch.why = why_of(r, it->second, b == baseline_of.end() ? nullptr : b->second, t, max_error);
    } else if (is_apart) {
      ch.shares_with.clear();
      ch.device_bytes = own_bytes(t);
      ch.why = "kept apart as recorded (its weights are the same as " + t.shares_with + "'s)";
    } else if (c.params_json.find("shared_by") != std::string::npos) {
      ch.why = "holds the same weights as " + t.shares_with + ": shares its copy (" + c.spec + ")";
    } else {
      ch.why = "tied to " + t.shares_with + ": shares its weights and their format (" + c.spec + ")";
    }
    r.choices.push_back(std::move(ch));
  }
}

}  // namespace edo::tuner
