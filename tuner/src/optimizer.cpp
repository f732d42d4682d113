#include "edo/tuner/optimizer.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace edo::tuner {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

struct Point {
  uint64_t bytes;
  double time;
  uint64_t host;
  uint32_t prev;  // index in the previous level
  uint32_t opt;   // index in the item's pruned options
};

uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

bool before(const Point& a, const Point& b) {
  if (a.bytes != b.bytes) return a.bytes < b.bytes;
  if (a.time != b.time) return a.time < b.time;
  if (a.prev != b.prev) return a.prev < b.prev;
  return a.opt < b.opt;
}

// Keeps the points no other point beats in both bytes and time (sorted: bytes ascending, so
// a point survives when it is strictly faster than everything cheaper).
std::vector<Point> non_dominated(std::vector<Point>& pts) {
  std::sort(pts.begin(), pts.end(), before);
  std::vector<Point> out;
  double best = std::numeric_limits<double>::infinity();
  for (const Point& p : pts) {
    if (p.time < best) {
      out.push_back(p);
      best = p.time;
    }
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

Solution solve_plan(const std::vector<PlanItem>& items, uint64_t budget, size_t max_frontier) {
  Solution sol;
  std::vector<std::vector<PlanOption>> opts(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    // Options of one item that another option of the same item beats are never needed.
    std::vector<PlanOption> o = items[i].options;
    std::stable_sort(o.begin(), o.end(), [](const PlanOption& a, const PlanOption& b) {
      return a.device_bytes != b.device_bytes ? a.device_bytes < b.device_bytes : a.step_us < b.step_us;
    });
    double best = std::numeric_limits<double>::infinity();
    for (const PlanOption& x : o) {
      if (x.step_us < best) {
        opts[i].push_back(x);
        best = x.step_us;
      }
    }
    if (opts[i].empty()) {
      sol.min_feasible_bytes = UINT64_MAX;
      return sol;
    }
  }
  std::vector<std::vector<Point>> levels;
  levels.push_back({Point{0, 0.0, 0, kNone, kNone}});
  for (size_t i = 0; i < items.size(); ++i) {
    const std::vector<Point>& prev = levels.back();
    std::vector<Point> next;
    next.reserve(prev.size() * opts[i].size());
    for (uint32_t j = 0; j < prev.size(); ++j)
      for (uint32_t k = 0; k < opts[i].size(); ++k) {
        const PlanOption& o = opts[i][k];
        next.push_back(Point{add_sat(prev[j].bytes, o.device_bytes), prev[j].time + o.step_us,
                             add_sat(prev[j].host, o.host_bytes), j, k});
      }
    levels.push_back(thin(non_dominated(next), max_frontier));
  }
  const std::vector<Point>& last = levels.back();
  for (const Point& p : last) sol.frontier.emplace_back(p.bytes, p.time);
  sol.min_feasible_bytes = last.front().bytes;
  // Times fall as bytes grow: the last point within the budget is the fastest plan.
  size_t pick = last.size();
  for (size_t k = 0; k < last.size() && last[k].bytes <= budget; ++k) pick = k;
  if (pick == last.size()) return sol;
  sol.feasible = true;
  sol.device_bytes = last[pick].bytes;
  sol.host_bytes = last[pick].host;
  sol.step_us = last[pick].time;
  sol.chosen.assign(items.size(), 0);
  uint32_t at = static_cast<uint32_t>(pick);
  for (size_t i = items.size(); i-- > 0;) {
    const Point& p = levels[i + 1][at];
    sol.chosen[i] = opts[i][p.opt].id;
    at = p.prev;
  }
  return sol;
}

}  // namespace edo::tuner
