// The placement of a plan's tables over N devices (edo/tuner/placement.h) and the plan over N
// devices built on it (placement_plan.h).
#include "edo/tuner/placement.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "placement_plan.h"

namespace edo::tuner {
namespace {

// A table is split for its lookups once it has more than this many devices' fair shares.
constexpr double kLookupSlack = 1.25;

uint64_t mul_sat(uint64_t a, uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

// floor(v * num / den) without overflow (bytes x rows exceeds 64 bits for large tables).
uint64_t scale(uint64_t v, uint64_t num, uint64_t den) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(v) * num / den);
}

struct Piece {
  uint64_t offset = 0, size = 0, bytes = 0;
  double lookups = 0;
};

// k contiguous ranges of `n` units (rows or columns), sizes differing by at most one; bytes and
// lookups in proportion, the bytes adding up to the item's exactly.
std::vector<Piece> split(const PlacementItem& it, uint64_t n, uint32_t k) {
  std::vector<Piece> out(k);
  for (uint32_t i = 0; i < k; ++i) {
    const uint64_t lo = scale(n, i, k), hi = scale(n, i + 1, k);
    out[i].offset = lo;
    out[i].size = hi - lo;
    out[i].bytes = scale(it.device_bytes, hi, n) - scale(it.device_bytes, lo, n);
    out[i].lookups = it.lookups_per_step * static_cast<double>(hi - lo) / static_cast<double>(n);
  }
  return out;
}

class Packer {
 public:
  Packer(uint32_t n, uint64_t budget, double total_bytes, double total_lookups)
      : budget_(budget), bytes_(n, 0), lookups_(n, 0.0),
        mean_bytes_(std::max(1.0, total_bytes / n)), mean_lookups_(total_lookups / n) {}

  // Places the pieces on distinct devices, each where it leaves the lowest balance score; false
  // (nothing placed) when some piece finds no device with room.
  bool place(const std::vector<Piece>& pieces, std::vector<model::TuneShard>& shards) {
    std::vector<uint32_t> chosen;
    for (const Piece& p : pieces) {
      uint32_t best = UINT32_MAX;
      double best_score = 0;
      for (uint32_t d = 0; d < bytes_.size(); ++d) {
        if (std::find(chosen.begin(), chosen.end(), d) != chosen.end()) continue;
        if (bytes_[d] > budget_ || p.bytes > budget_ - bytes_[d]) continue;
        const double s = score(d, p);
        if (best == UINT32_MAX || s < best_score || (s == best_score && bytes_[d] < bytes_[best])) {
          best = d;
          best_score = s;
        }
      }
      if (best == UINT32_MAX) {
        for (size_t i = 0; i < chosen.size(); ++i) {  // undo
          bytes_[chosen[i]] -= pieces[i].bytes;
          lookups_[chosen[i]] -= pieces[i].lookups;
        }
        return false;
      }
      chosen.push_back(best);
      bytes_[best] += p.bytes;
      lookups_[best] += p.lookups;
    }
    shards.clear();
    for (size_t i = 0; i < pieces.size(); ++i)
      shards.push_back({chosen[i], pieces[i].offset, pieces[i].size, pieces[i].bytes, pieces[i].lookups});
    return true;
  }

  std::vector<DeviceLoad> loads() const {
    std::vector<DeviceLoad> out;
    for (uint32_t d = 0; d < bytes_.size(); ++d) out.push_back({d, bytes_[d], lookups_[d]});
    return out;
  }
  double mean_lookups() const { return mean_lookups_; }

 private:
  // The larger of the device's bytes and lookups against the means, after taking the piece: the
  // device that stays least loaded on its busier measure wins.
  double score(uint32_t d, const Piece& p) const {
    const double b = static_cast<double>(bytes_[d] + p.bytes) / mean_bytes_;
    const double l = mean_lookups_ > 0 ? (lookups_[d] + p.lookups) / mean_lookups_ : 0.0;
    return std::max(b, l);
  }

  uint64_t budget_;
  std::vector<uint64_t> bytes_;
  std::vector<double> lookups_;
  double mean_bytes_, mean_lookups_;
};

// What the placement sees of a plan: one item per choice that holds its own bytes (a tied table
// that shares its owner's weights follows the owner; its lookups are the owner's item's).
struct PlanItems {
  std::vector<PlacementItem> items;
  std::vector<size_t> choice_of;  // item -> index in r.choices
};

PlanItems items_of(const model::TuneResult& r) {
  PlanItems out;
  std::map<std::string, size_t> item_of_owner;
  for (size_t i = 0; i < r.choices.size(); ++i) {
    const model::TuneChoice& ch = r.choices[i];
    if (!ch.shares_with.empty() && ch.device_bytes == 0) continue;
    const model::TuneTable* t = r.table_named(ch.table);
    const model::TuneCandidate* c = ch.candidate >= 0 && static_cast<size_t>(ch.candidate) < r.candidates.size()
                                        ? &r.candidates[static_cast<size_t>(ch.candidate)]
                                        : nullptr;
    PlacementItem it;
    it.name = ch.table;
    it.device_bytes = ch.device_bytes;
    it.lookups_per_step = t && std::isfinite(t->lookups_per_step) ? t->lookups_per_step : 0.0;
    it.rows = t ? t->rows : 0;
    it.dim = t ? t->dim : 0;
    const std::string strategy = c ? c->strategy : "";
    // Hashed formats share their buckets among all rows: no row range owns a part of them.
    if (strategy == "multihash" || strategy == "qr") it.rows = 0;
    // Fitted formats' bytes are not per column (codebooks, factors).
    if (strategy == "pq" || strategy == "lowrank" || strategy == "multihash" || strategy == "qr") it.dim = 0;
    item_of_owner[ch.table] = out.items.size();
    out.items.push_back(std::move(it));
    out.choice_of.push_back(i);
  }
  // Tied tables' lookups are served by their owner's shards.
  for (const auto& ch : r.choices) {
    if (ch.shares_with.empty() || ch.device_bytes != 0) continue;
    auto it = item_of_owner.find(ch.shares_with);
    const model::TuneTable* t = r.table_named(ch.table);
    if (it != item_of_owner.end() && t && std::isfinite(t->lookups_per_step)) out.items[it->second].lookups_per_step += t->lookups_per_step;
  }
  return out;
}

void apply(model::TuneResult& r, const PlanItems& pi, const Placement& p) {
  std::map<std::string, size_t> choice_of_owner;
  for (size_t k = 0; k < pi.items.size(); ++k) {
    model::TuneChoice& ch = r.choices[pi.choice_of[k]];
    ch.sharding = p.sharding[k];
    ch.shards = p.shards[k];
    choice_of_owner[ch.table] = pi.choice_of[k];
  }
  for (auto& ch : r.choices) {
    if (ch.shares_with.empty() || ch.device_bytes != 0) continue;
    auto it = choice_of_owner.find(ch.shares_with);
    if (it == choice_of_owner.end()) continue;
    const model::TuneChoice& owner = r.choices[it->second];
    ch.sharding = owner.sharding;
    ch.shards = owner.shards;
    for (auto& s : ch.shards) {
      s.device_bytes = 0;
      s.lookups_per_step = 0;
    }
  }
}

}  // namespace

namespace {

// How a pass picks each table's number of shards k (the first k in its list that fits):
//   kSmallest: from the k its lookups ask for up to N (then the smaller ones);
//   kWideWhenSplit: a table larger than a device's budget or split for its lookups takes the most
//     shards it can (N down to 1), the others as kSmallest;
//   kWideAll: every table takes the most shards it can.
enum class Pass { kSmallest, kWideWhenSplit, kWideAll };

Placement place_pass(const std::vector<PlacementItem>& items, uint32_t n, uint64_t budget, Pass pass) {
  Placement out;
  double total_bytes = 0, total_lookups = 0;
  for (const auto& it : items) {
    total_bytes += static_cast<double>(it.device_bytes);
    total_lookups += std::isfinite(it.lookups_per_step) && it.lookups_per_step > 0 ? it.lookups_per_step : 0.0;
  }
  Packer packer(n, budget, total_bytes, total_lookups);
  out.sharding.assign(items.size(), "");
  out.shards.assign(items.size(), {});
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (items[a].device_bytes != items[b].device_bytes) return items[a].device_bytes > items[b].device_bytes;
    if (items[a].lookups_per_step != items[b].lookups_per_step) return items[a].lookups_per_step > items[b].lookups_per_step;
    return items[a].name < items[b].name;
  });
  for (size_t i : order) {
    const PlacementItem& it = items[i];
    const double l = std::isfinite(it.lookups_per_step) && it.lookups_per_step > 0 ? it.lookups_per_step : 0.0;
    // The shards its lookups ask for: as many as it has fair shares of all lookups, once it has
    // more than kLookupSlack of one (a table a little over its share stays whole: a split costs
    // communication that no one here weighs).
    uint32_t wanted = 1;
    const double fair = packer.mean_lookups();
    if (n > 1 && fair > 0 && l > fair * kLookupSlack)
      wanted = static_cast<uint32_t>(std::min<double>(n, std::ceil(l / fair - 1e-9)));
    std::vector<uint32_t> tries;
    const bool wide = pass == Pass::kWideAll || (pass == Pass::kWideWhenSplit && (wanted > 1 || it.device_bytes > budget));
    if (wide) {
      for (uint32_t k = n; k >= 1; --k) tries.push_back(k);
    } else {
      for (uint32_t k = wanted; k <= n; ++k) tries.push_back(k);
      for (uint32_t k = 1; k < wanted; ++k) tries.push_back(k);  // a table that cannot be split that way
    }
    bool placed = false;
    for (uint32_t k : tries) {
      Piece whole{0, it.rows, it.device_bytes, l};
      if (k == 1) {
        placed = packer.place({whole}, out.shards[i]);
        if (placed) out.sharding[i] = "table_wise";
      } else if (it.rows >= k) {
        PlacementItem scaled = it;
        scaled.lookups_per_step = l;
        placed = packer.place(split(scaled, it.rows, k), out.shards[i]);
        if (placed) out.sharding[i] = "row_wise";
      } else if (it.dim > 0 && it.dim % k == 0 && (it.dim / k) % 4 == 0) {
        PlacementItem scaled = it;
        scaled.lookups_per_step = l;
        placed = packer.place(split(scaled, it.dim, k), out.shards[i]);
        if (placed) out.sharding[i] = "column_wise";
      }
      if (placed) break;
    }
    if (!placed) {
      out.unplaced = it.name;
      out.devices = packer.loads();
      return out;
    }
  }
  out.feasible = true;
  out.devices = packer.loads();
  return out;
}

}  // namespace

Placement place_tables(const std::vector<PlacementItem>& items, uint32_t devices, uint64_t budget) {
  const uint32_t n = std::max<uint32_t>(1, devices);
  // The fewest shards first; when the greedy leaves no room for some table (an early split left
  // the devices' free room uneven), the split tables over as many devices as they can, then every
  // table that can be split.
  Placement first = place_pass(items, n, budget, Pass::kSmallest);
  if (first.feasible || n == 1) return first;
  for (Pass pass : {Pass::kWideWhenSplit, Pass::kWideAll}) {
    Placement p = place_pass(items, n, budget, pass);
    if (p.feasible) return p;
  }
  return first;
}

std::vector<DeviceLoad> device_loads(const model::TuneResult& r) {
  if (r.devices <= 1 || !r.feasible) return {};
  std::vector<DeviceLoad> out;
  for (uint32_t d = 0; d < r.devices; ++d) out.push_back({d, 0, 0.0});
  for (const auto& ch : r.choices)
    for (const auto& s : ch.shards)
      if (s.device < r.devices) {
        out[s.device].device_bytes += s.device_bytes;
        out[s.device].lookups_per_step += s.lookups_per_step;
      }
  return out;
}

void replan_devices(model::TuneResult& r, uint64_t budget, double max_error) {
  const uint32_t n = std::max<uint32_t>(1, r.devices);
  const uint64_t total = mul_sat(budget, n);
  plan_total(r, total, max_error);
  const uint64_t min_total = r.min_feasible_bytes;
  // The plan with the fewest bytes, and the smallest per-device budget its placement fits: the
  // budget to name when nothing fits, and the last resort when the tightened plans do not place.
  uint64_t min_budget = UINT64_MAX;
  model::TuneResult least;
  PlanItems least_items;
  if (min_total != UINT64_MAX) {
    least = r;
    plan_total(least, min_total, max_error);
    if (least.feasible) {
      least_items = items_of(least);
      uint64_t lo = min_total / n, hi = min_total;  // one device with room for all of it always places
      while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if (place_tables(least_items.items, n, mid).feasible) hi = mid;
        else lo = mid + 1;
      }
      min_budget = hi;
    }
  }
  bool placed = false;
  if (r.feasible) {
    // Tighten the total until the choice places: steps from 1/64 of the total, doubling, the
    // last try the fewest-bytes plan itself.
    uint64_t step = std::max<uint64_t>(1, total / 64);
    for (int round = 0; round < 64; ++round) {
      const PlanItems pi = items_of(r);
      const Placement p = place_tables(pi.items, n, budget);
      if (p.feasible) {
        apply(r, pi, p);
        placed = true;
        break;
      }
      if (r.plan_device_bytes <= min_total) break;
      plan_total(r, r.plan_device_bytes - std::min(step, r.plan_device_bytes - min_total), max_error);
      step = mul_sat(step, 2);
      if (!r.feasible) break;
    }
  }
  if (!placed && min_budget <= budget && least.feasible) {
    // Greedy packing is not monotone in the budget: the fewest-bytes plan placed within
    // min_budget (<= budget) is within the budget too.
    r = least;
    apply(r, least_items, place_tables(least_items.items, n, min_budget));
    placed = true;
  }
  r.budget_bytes = budget;
  r.min_feasible_bytes = min_budget;
  if (!placed) {
    r.feasible = false;
    r.choices.clear();
    r.plan_device_bytes = r.plan_host_bytes = 0;
    r.plan_step_us = 0;
  }
}

}  // namespace edo::tuner
