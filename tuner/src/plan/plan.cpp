// replan(): the plan from the measured candidates, for a budget, an error limit and the
// run's objective (docs/tuning.md "The plan"); over several devices, placement.cpp places it.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <unordered_map>

#include "edo/model/weights.h"
#include "edo/tuner/optimizer.h"
#include "edo/text/glob.h"
#include "edo/tuner/tuner.h"
#include "candidates.h"
#include "explain.h"
#include "placement_plan.h"

namespace edo::tuner {
namespace {

// The step times the plan ranks a table's options by, so that noise cannot decide the plan
// (issue 29 point 8: one recording and budget, one plan, run after run, loaded machine or not).
//
// An option's time is a measured part, known within an interval (the spread of its timed
// repetitions), plus an exact part. Most options are all measured. A time modelled from the
// baseline's (the CPU's offload: the baseline's lookups plus the misses' modelled transfer) has
// no interval of its own: it is the baseline's measured time plus an exact offset, so it is of
// the baseline's *family*, and the cache sizes differ from each other and from the baseline by
// exactly their transfer. A time with no measured part at all (a device model) is exact.
//
// An interval is the range of a handful of repetitions (TuneOptions::reps, 5 by default), which
// covers about two thirds of what the next repetition could give (n - 1 of n + 1 for n
// samples): two options of equal speed measured during different bursts of other work on the
// machine often show disjoint ranges. Each range is widened by half its width on either side
// (for 5 samples of a normal spread: about +-2.3 sigma, ~98 % of repetitions) before ties are
// sought, so that only a difference the repetitions show beyond their own noise ranks apart.
//
// Families whose intervals overlap, directly or through another family's (single linkage over
// the intervals sorted by their low end), are ties: every member ranks at the group's fastest
// measured time plus its exact offset. The knapsack then orders ties by least loss (least
// change), then fewer bytes (optimizer.h). Walking from the fastest option instead (each option
// ties the group leader's interval or starts a group) let an exact time between two measured
// ones cut a tie in two, and the measured times of that run decided which side an option fell.
void rank_ties(std::vector<PlanOption>& options, const std::vector<model::TuneCandidate>& cands,
               const model::TuneCandidate* baseline) {
  auto measured = [](const model::TuneCandidate& c) { return std::isfinite(c.step_us_lo) && std::isfinite(c.step_us_hi); };
  const bool baseline_measured = baseline && measured(*baseline) && std::isfinite(baseline->step_us);
  struct Family {
    double lo, hi, base_us;
    size_t group = 0;
  };
  auto widened = [](const model::TuneCandidate& m, double m_us) {
    const double lo = std::min(m.step_us_lo, m_us), hi = std::max(m.step_us_hi, m_us), half = (hi - lo) / 2;
    return Family{lo - half, hi + half, m_us};
  };
  std::map<const model::TuneCandidate*, Family> families;  // by the candidate whose measurement they share
  std::vector<std::pair<const model::TuneCandidate*, double>> member(options.size());  // family, exact offset
  for (size_t i = 0; i < options.size(); ++i) {
    const model::TuneCandidate& c = cands[options[i].id];
    const double us = options[i].step_us;
    const model::TuneCandidate* base = &c;
    Family f{us, us, us};
    if (measured(c)) {
      f = widened(c, us);
    } else if (baseline_measured) {
      base = baseline;
      f = widened(*baseline, baseline->step_us);
    }
    member[i] = {base, us - f.base_us};
    families.emplace(base, f);
  }
  std::vector<Family*> by_lo;
  for (auto& [c, f] : families) by_lo.push_back(&f);
  std::stable_sort(by_lo.begin(), by_lo.end(), [](const Family* a, const Family* b) {
    return a->lo != b->lo ? a->lo < b->lo : a->base_us < b->base_us;
  });
  std::vector<double> fastest;  // per group: its fastest measured time
  double reach = -INFINITY;
  for (Family* f : by_lo) {
    if (fastest.empty() || f->lo > reach) fastest.push_back(f->base_us);
    else fastest.back() = std::min(fastest.back(), f->base_us);
    reach = std::max(reach, f->hi);
    f->group = fastest.size() - 1;
  }
  for (size_t i = 0; i < options.size(); ++i) {
    const auto& [base, offset] = member[i];
    options[i].step_us = std::max(0.0, fastest[families.at(base).group] + offset);
  }
}

// Offload weighed against the formats that fit (issue 34 point 3). An offload loses no
// accuracy, so under least change its loss was the token change alone, and it beat fp16
// (error 0.00018) even where its misses over the host link slowed the step: at 10 MB a uniform
// table was offloaded at 57 % hits where fp16 fit. An offload that slows the step (its ranked
// time above the baseline's: on the CPU the misses' modelled transfer, on a modelled device
// the device model's host-link time) is a change of the step time, and is charged the loss of
// a negligible error (kNegligibleError, explain.h) when the table has a format that fits the
// error limit with an error below it, needs no retraining and ranks no slower than that
// offload. So such a format is taken before the offload whenever both fit, the offload is
// still taken before any format of larger error or retraining, and where no such format fits
// the budget the offload stands as before. Deterministic: ranked times (exact offsets).
void charge_slow_offloads(std::vector<PlanOption>& options, const std::vector<model::TuneCandidate>& cands, size_t base_id,
                          ExtraLoss& extra) {
  const PlanOption* base = nullptr;
  for (const auto& o : options)
    if (o.id == base_id) base = &o;
  if (!base) return;
  const double base_us = base->step_us;
  for (auto& o : options) {
    const auto& c = cands[o.id];
    if (c.strategy != "offload" || !(o.step_us > base_us)) continue;
    const bool rival = std::any_of(options.begin(), options.end(), [&](const PlanOption& f) {
      const auto& fc = cands[f.id];
      return f.id != base_id && fc.strategy != "offload" && !fc.needs_retraining && std::isfinite(fc.error) &&
             fc.error < kNegligibleError && f.step_us <= o.step_us;
    });
    if (!rival) continue;
    o.loss += loss_units(kNegligibleError);
    extra[o.id] = loss_units(kNegligibleError);
  }
}

// The partial plans the knapsack keeps after each table: 16,384 (bytes apart by 1/16,384 of
// their range at most), fewer past 1,024 tuned tables so that a solve visits at most 2^24
// (10,000 tables: 1,677 each, a few seconds and 130 MB instead of minutes and gigabytes).
size_t frontier_points(size_t items) {
  return std::clamp<size_t>((size_t{1} << 24) / std::max<size_t>(1, items), 1024, size_t{1} << 14);
}

// Why a table was not tuned, told apart by what the run stored: outside --tables, stored
// quantised by the job (no format to encode from), or else too small to matter
// (small_tables.h; enumerate() in tuner.cpp untunes tables for these three reasons only).
std::string untuned_why(const model::TuneResult& r, const model::TuneTable& t, std::vector<model::TuneReason>& reasons) {
  if (glob_match(r.tables_glob, t.name) && !baseline_spec(t.dtype).empty())
    return "too small to matter: kept as recorded with its exact bytes, not timed (one of the smallest tables, together "
           "at most 1% of the budget)";
  std::string why = "not tuned (";
  model::say(why, reasons, {.code = model::Reason::kOutsideTables});
  return why + "): kept as recorded";
}

// Offload caches grown with the budget left, priced (issue 34 point 3). The knapsack takes,
// among a table's offload sizes that tie in time and loss (on a CPU every size can: host and
// device memory are one, and measured times tie within their noise), the fewest bytes: a
// 53-row cache on a 1M-row table with most of the budget unused. The room the plan leaves is
// then spent on larger caches where extra rows pay most: each step replaces one table's chosen
// LRU offload by a larger one of the same table, policy and optimizer that is no slower (as
// ranked, ties equal) and no lossier, and the step taken next is the one that avoids the most
// missed bytes per step per extra device byte,
//   (held-out hit rate gained) x lookups per step x row bytes / extra device bytes,
// which is step time saved per byte on any host link: a miss costs its row's bytes over the
// link (the CPU backend's 25 GB/s model, a device model's host_link_gbs), one link for every
// table of the device, so the order does not depend on its speed. A step that avoids no miss
// is not taken (the extra rows would not pay), and no cache grows past its knee (params
// "knee_rows": the size past which an extra row adds fewer hits than the table's average row,
// cache_replay.h). Ties: plan order, then the smaller cache. Steps are taken until none fits.
void grow_caches_priced(const model::TuneResult& r, const std::vector<PlanItem>& items, const std::vector<size_t>& item_table,
                        uint64_t room, Solution& sol) {
  auto params = [&](size_t id) -> const model::StrategyParams& { return r.candidates[id].params; };
  auto lru = [](const model::StrategyParams& p) { return p.policy == "lru"; };
  auto hits = [&](size_t id) {
    const auto& c = r.candidates[id];
    return c.heldout_hit_rate ? *c.heldout_hit_rate : c.hit_rate ? *c.hit_rate : 0.0;
  };
  auto option = [&](size_t k, size_t id) -> const PlanOption* {
    for (const auto& o : items[k].options)
      if (o.id == id) return &o;
    return nullptr;
  };
  for (;;) {
    size_t best_k = items.size();
    const PlanOption* best = nullptr;
    double best_value = 0;
    uint64_t best_rows = 0;
    for (size_t k = 0; k < items.size() && k < sol.chosen.size(); ++k) {
      const size_t id = sol.chosen[k];
      const auto& c = r.candidates[id];
      if (c.strategy != "offload") continue;
      const auto& p = params(id);
      const uint64_t knee = p.knee_rows.value_or(0), have = p.cache_rows.value_or(0);
      const PlanOption* now = option(k, id);
      if (knee <= have || !lru(p) || !now) continue;
      const model::TuneTable& t = r.tables[item_table[k]];
      const double row_bytes = static_cast<double>(t.dim) * model::dtype_size(t.dtype);
      for (const auto& o : items[k].options) {
        const auto& oc = r.candidates[o.id];
        if (oc.strategy != "offload" || oc.optimizer != c.optimizer || o.loss > now->loss || o.step_us > now->step_us) continue;
        const auto& op = params(o.id);
        const uint64_t rows = op.cache_rows.value_or(0);
        if (!lru(op) || rows <= have || rows > knee) continue;
        if (sol.device_bytes - now->device_bytes + o.device_bytes > room) continue;
        const double gained = hits(o.id) - hits(id);
        if (!(gained > 0)) continue;
        const double extra = static_cast<double>(o.device_bytes) - static_cast<double>(now->device_bytes);
        const double value = extra > 0 ? gained * t.lookups_per_step * row_bytes / extra : INFINITY;
        if (!best || value > best_value || (value == best_value && k == best_k && rows < best_rows)) {
          best_k = k;
          best = &o;
          best_value = value;
          best_rows = rows;
        }
      }
    }
    if (!best) return;
    const PlanOption* now = option(best_k, sol.chosen[best_k]);
    sol.device_bytes = sol.device_bytes - now->device_bytes + best->device_bytes;
    sol.host_bytes = sol.host_bytes - now->host_bytes + best->host_bytes;
    sol.chosen[best_k] = best->id;
  }
}

// The plan's choice for every table, given the candidate chosen for each group's owner (tables
// of no group chosen: kept as recorded). A tied table's step time is its share of its group's
// lookups; identical tables kept apart by the choice hold their own bytes.
void make_choices(model::TuneResult& r, const std::map<std::string, size_t>& chosen,
                  const std::map<std::string, const model::TuneCandidate*>& baseline_of,
                  const std::function<const std::vector<size_t>&(const std::string&)>& of_table, const ExtraLoss& extra,
                  double max_error) {
  // Lookups per step of each group (owner and members), to split a group's time.
  std::map<std::string, double> group_lookups;
  for (const auto& t : r.tables) group_lookups[t.shares_with.empty() ? t.name : t.shares_with] += t.lookups_per_step;
  // Identical (untied) tables kept apart by the chosen candidate: owner -> their names.
  std::map<std::string, std::vector<std::string>> apart;
  for (const auto& [owner, ci] : chosen) {
    if (const auto& from = r.candidates[ci].params.apart_from) apart[owner] = *from;
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
      ch.why = !t.tuned ? untuned_why(r, t, ch.why_reasons)
                        : "kept as recorded: its baseline was not measured (stopped early)";
      if (!t.shares_with.empty()) {
        ch.why = "tied to " + t.shares_with + ": shares its weights, kept as recorded";
        ch.why_reasons.clear();
      }
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
      if (!kept_apart.empty())  // (most tables have no identical copies: no walk over every table)
        for (const auto& tt : r.tables)
          if (std::find(kept_apart.begin(), kept_apart.end(), tt.name) != kept_apart.end()) members += own_bytes(tt);
      ch.device_bytes = c.device_bytes - std::min(c.device_bytes, members);
      ch.host_bytes = c.host_bytes;
      ch.ssd_bytes = c.ssd_bytes;
      auto b = baseline_of.find(owner);
      ch.why = why_of(r, it->second, b == baseline_of.end() ? nullptr : b->second, t, max_error, of_table(owner), extra, ch.why_reasons);
    } else if (is_apart) {
      ch.shares_with.clear();
      ch.device_bytes = own_bytes(t);
      ch.why = "kept apart as recorded (its weights are the same as " + t.shares_with + "'s)";
    } else if (c.params.shared_by) {
      ch.why = "holds the same weights as " + t.shares_with + ": shares its copy (" + c.spec + ")";
    } else {
      ch.why = "tied to " + t.shares_with + ": shares its weights and their format (" + c.spec + ")";
    }
    r.choices.push_back(std::move(ch));
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
  // Each table's candidates, in order: one pass over them all (a scan of every candidate per
  // table is 10,000 x 175,000 name comparisons on a recording of 10,000 tables).
  std::unordered_map<std::string, std::vector<size_t>> candidates_of;
  for (size_t ci = 0; ci < r.candidates.size(); ++ci) candidates_of[r.candidates[ci].table].push_back(ci);
  const std::vector<size_t> none;
  auto of_table = [&](const std::string& name) -> const std::vector<size_t>& {
    auto it = candidates_of.find(name);
    return it == candidates_of.end() ? none : it->second;
  };
  ExtraLoss extra;  // charged slow offloads (charge_slow_offloads)
  for (size_t ti = 0; ti < r.tables.size(); ++ti) {
    const model::TuneTable& t = r.tables[ti];
    if (!t.shares_with.empty()) continue;
    r.baseline_device_bytes += t.device_bytes;
    PlanItem item;
    if (t.tuned)
      for (size_t ci : of_table(t.name)) {
        const auto& c = r.candidates[ci];
        if (c.table == t.name && c.plannable(r.allow_unvalidated) && c.error <= max_error)
          item.options.push_back({c.device_bytes, c.host_bytes, c.step_us, ci,
                                  candidate_loss(c, baseline_of.count(t.name) && baseline_of.at(t.name) == &c), c.ssd_bytes});
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
    rank_ties(item.options, r.candidates, base != baseline_of.end() ? base->second : nullptr);
    charge_slow_offloads(item.options, r.candidates, static_cast<size_t>(base->second - r.candidates.data()), extra);
    items.push_back(std::move(item));
    item_table.push_back(ti);
  }
  const uint64_t room = budget > fixed ? budget - fixed : 0;
  // The frontier (bytes vs measured step time) and the smallest feasible budget are the speed
  // objective's on the measured times; the plan is the run's objective's on the ranked ones.
  const size_t frontier = frontier_points(items.size());
  // The host and SSD budgets (0: none) bound the whole plan's bytes on those tiers.
  const TierLimits limits{r.host_budget_bytes, r.ssd_budget_bytes};
  const Solution fastest = solve_plan(exact, room, frontier, Objective::kSpeed, limits);
  Solution sol = solve_plan(items, room, frontier, r.objective, limits);
  if (sol.feasible) grow_caches_priced(r, items, item_table, room, sol);
  for (const auto& [b, us] : fastest.frontier) r.frontier.emplace_back(b + fixed, us);
  r.min_feasible_bytes = sol.min_feasible_bytes == UINT64_MAX ? UINT64_MAX : sol.min_feasible_bytes + fixed;
  if (!sol.feasible || fixed > budget) {
    r.plan_device_bytes = r.plan_host_bytes = r.plan_ssd_bytes = 0;
    r.plan_step_us = 0;
    return;
  }
  r.feasible = true;
  r.plan_device_bytes = sol.device_bytes + fixed;
  r.plan_host_bytes = sol.host_bytes;
  r.plan_ssd_bytes = sol.ssd_bytes;
  // The plan's time is its choices' measured times (the knapsack ranked ties as equal).
  r.plan_step_us = 0;
  for (size_t id : sol.chosen) r.plan_step_us += r.candidates[id].step_us;
  std::map<std::string, size_t> chosen;  // owner -> candidate index
  for (size_t k = 0; k < items.size(); ++k) chosen[r.tables[item_table[k]].name] = sol.chosen[k];
  make_choices(r, chosen, baseline_of, of_table, extra, max_error);
}

}  // namespace edo::tuner
