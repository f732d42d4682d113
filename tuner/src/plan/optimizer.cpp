#include "edo/tuner/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <tuple>

namespace edo::tuner {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

struct Point {
  uint64_t bytes;
  double time;
  uint64_t host;
  uint32_t prev;  // index in the previous level
  uint32_t opt;   // index in the item's pruned options
  int64_t loss;
  uint64_t ssd = 0;
};

// The objective's key: what a plan minimises first, then second.
struct Key {
  Objective objective;
  bool less(double ta, int64_t la, double tb, int64_t lb) const {
    return objective == Objective::kSpeed ? std::tie(ta, la) < std::tie(tb, lb) : std::tie(la, ta) < std::tie(lb, tb);
  }
  bool less(const Point& a, const Point& b) const { return less(a.time, a.loss, b.time, b.loss); }
  bool less(const PlanOption& a, const PlanOption& b) const { return less(a.step_us, a.loss, b.step_us, b.loss); }
};

uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

// Keeps the points no other point beats in both bytes and key (sorted: bytes ascending, so
// a point survives when its key is strictly better than everything cheaper's).
void sort_points(std::vector<Point>& pts, const Key& key) {
  std::sort(pts.begin(), pts.end(), [&](const Point& a, const Point& b) {
    if (a.bytes != b.bytes) return a.bytes < b.bytes;
    if (key.less(a, b)) return true;
    if (key.less(b, a)) return false;
    if (a.prev != b.prev) return a.prev < b.prev;
    return a.opt < b.opt;
  });
}

std::vector<Point> non_dominated(std::vector<Point>& pts, const Key& key) {
  sort_points(pts, key);
  std::vector<Point> out;
  for (const Point& p : pts)
    if (out.empty() || key.less(p, out.back())) out.push_back(p);
  return out;
}

// With tier limits: the points within them that no other beats in device, host and SSD bytes
// and key at once. Bytes ascending, a point is beaten by a point kept before it with no more
// host and SSD bytes and a key no worse; per distinct (host, SSD) pair only the last one kept
// matters (its key is the best of that pair so far), so each point is compared with one point
// per pair: few pairs in practice (the host and SSD bytes of the few offloaded or SSD tables'
// options), where comparing with every kept point was quadratic in the frontier.
std::vector<Point> non_dominated_tiers(std::vector<Point>& pts, const Key& key, const TierLimits& limits) {
  std::vector<Point> in;
  for (const Point& p : pts)
    if ((!limits.host || p.host <= limits.host) && (!limits.ssd || p.ssd <= limits.ssd)) in.push_back(p);
  sort_points(in, key);
  std::vector<Point> out, best;  // best: per (host, SSD) pair, the last point kept with it
  std::map<std::pair<uint64_t, uint64_t>, size_t> pair_at;
  for (const Point& p : in) {
    bool beaten = false;
    for (const Point& q : best)
      if (q.host <= p.host && q.ssd <= p.ssd && !key.less(p, q)) {
        beaten = true;
        break;
      }
    if (beaten) continue;
    out.push_back(p);
    auto [it, fresh] = pair_at.try_emplace({p.host, p.ssd}, best.size());
    if (fresh) best.push_back(p);
    else best[it->second] = p;
  }
  return out;
}

std::vector<Point> thin(const std::vector<Point>& pts, size_t cap) {
  if (pts.size() <= cap || cap < 2) return pts;
  const double step = static_cast<double>(pts.back().bytes - pts.front().bytes) / static_cast<double>(cap);
  std::vector<Point> out{pts.front()};
  for (size_t i = 1; i + 1 < pts.size(); ++i)
    if (static_cast<double>(pts[i].bytes - out.back().bytes) >= step) out.push_back(pts[i]);
  out.push_back(pts.back());
  return out;
}

}  // namespace

int64_t loss_units(double loss) {
  if (!(loss > 0)) return 0;
  // At most 2^62 / 1e9 per option: sums over millions of tables stay exact.
  return loss >= 4.6e9 ? int64_t{1} << 52 : static_cast<int64_t>(std::llround(loss * 1e9));
}

Solution solve_plan(const std::vector<PlanItem>& items, uint64_t budget, size_t max_frontier, Objective objective,
                    TierLimits limits) {
  if (limits.any()) {
    // The best plan without the limits is the best with them when it meets them (and the
    // one-budget search keeps fewer points: it is faster and thins less).
    Solution free = solve_plan(items, budget, max_frontier, objective);
    if (free.feasible && (!limits.host || free.host_bytes <= limits.host) && (!limits.ssd || free.ssd_bytes <= limits.ssd))
      return free;
  }
  const Key key{objective};
  Solution sol;
  std::vector<std::vector<PlanOption>> opts(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    // Options of one item that another option of the same item beats are never needed.
    std::vector<PlanOption> o = items[i].options;
    std::stable_sort(o.begin(), o.end(), [&](const PlanOption& a, const PlanOption& b) {
      return a.device_bytes != b.device_bytes ? a.device_bytes < b.device_bytes : key.less(a, b);
    });
    for (const PlanOption& x : o) {
      // With tier limits an option with more device bytes may be needed for its fewer host or
      // SSD bytes: all are kept (the merge drops what another point beats).
      if (limits.any() || opts[i].empty() || key.less(x, opts[i].back())) opts[i].push_back(x);
    }
    if (opts[i].empty()) {
      sol.min_feasible_bytes = UINT64_MAX;
      return sol;
    }
  }
  // Only the last level is kept whole; the earlier ones keep how each point was reached (its
  // point in the level before and its option), all the walk back needs: 8 bytes a point
  // instead of 40 (10,000 items of 16,384 points were 6.5 GB).
  struct Step {
    uint32_t prev, opt;
  };
  std::vector<std::vector<Step>> steps;
  steps.reserve(items.size());
  std::vector<Point> last{Point{0, 0.0, 0, kNone, kNone, 0}};
  std::vector<Point> next;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::vector<Point>& prev = last;
    next.clear();
    next.reserve(prev.size() * opts[i].size());
    for (uint32_t j = 0; j < prev.size(); ++j)
      for (uint32_t k = 0; k < opts[i].size(); ++k) {
        const PlanOption& o = opts[i][k];
        next.push_back(Point{add_sat(prev[j].bytes, o.device_bytes), prev[j].time + o.step_us,
                             add_sat(prev[j].host, o.host_bytes), j, k, prev[j].loss + o.loss,
                             add_sat(prev[j].ssd, o.ssd_bytes)});
      }
    last = thin(limits.any() ? non_dominated_tiers(next, key, limits) : non_dominated(next, key), max_frontier);
    if (last.empty()) {  // no partial plan within the host or SSD limit
      sol.min_feasible_bytes = UINT64_MAX;
      return sol;
    }
    std::vector<Step> s(last.size());
    for (size_t p = 0; p < last.size(); ++p) s[p] = {last[p].prev, last[p].opt};
    steps.push_back(std::move(s));
  }
  sol.min_feasible_bytes = last.front().bytes;
  size_t pick = last.size();
  if (!limits.any()) {
    for (const Point& p : last) sol.frontier.emplace_back(p.bytes, p.time);
    // Keys fall as bytes grow: the last point within the budget is the best plan.
    for (size_t k = 0; k < last.size() && last[k].bytes <= budget; ++k) pick = k;
  } else {
    // Keys need not fall as bytes grow (a point may be kept for its host or SSD bytes): the
    // best key within the budget (ties: fewer bytes, as sorted), and the frontier of the
    // (bytes, time) pairs the kept points make.
    for (size_t k = 0; k < last.size() && last[k].bytes <= budget; ++k)
      if (pick == last.size() || key.less(last[k], last[pick])) pick = k;
    for (const Point& p : last)
      if (sol.frontier.empty() || p.time < sol.frontier.back().second) sol.frontier.emplace_back(p.bytes, p.time);
  }
  if (pick == last.size()) return sol;
  sol.feasible = true;
  sol.device_bytes = last[pick].bytes;
  sol.host_bytes = last[pick].host;
  sol.ssd_bytes = last[pick].ssd;
  sol.step_us = last[pick].time;
  sol.loss = last[pick].loss;
  sol.chosen.assign(items.size(), 0);
  uint32_t at = static_cast<uint32_t>(pick);
  for (size_t i = items.size(); i-- > 0;) {
    const Step& p = steps[i][at];
    sol.chosen[i] = opts[i][p.opt].id;
    at = p.prev;
  }
  return sol;
}

}  // namespace edo::tuner
