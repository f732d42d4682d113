#include "support/report/report_union.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "support/terminal.h"

namespace edo::cli {

using json = nlohmann::ordered_json;

namespace {
constexpr const char* kEstimatedFrom = "ordered samples interleaved by progress";
constexpr const char* kAssumption =
    "the ranks advance in lock-step: a reference is placed at its position over its rank's stream length";
}  // namespace

double union_difference(const model::TableView& t) {
  if (!t.union_lru || !t.union_lru->available) return 0.0;
  const auto& u = t.union_lru->curve;
  const auto& p = t.summary.lru_curve;
  double most = 0.0;
  for (size_t i = 0; i < u.size(); ++i) {
    // The same cache sizes (stats::lru_cache_sizes); a per-rank curve without a histogram is 0.
    const double per_rank = i < p.size() && p[i].x == u[i].x ? p[i].y : 0.0;
    most = std::max(most, std::fabs(u[i].y - per_rank));
  }
  return most;
}

json union_lru_json(const model::TableView& t) {
  if (!t.union_lru) return json(nullptr);
  const stats::UnionLru& u = *t.union_lru;
  json j;
  j["available"] = u.available;
  if (!u.available) j["why_not"] = u.why_not;
  j["estimated_from"] = kEstimatedFrom;
  j["assumption"] = kAssumption;
  j["ranks"] = u.ranks;
  j["lookups"] = u.lookups;
  if (!u.available) return j;
  j["rate"] = u.rate;
  j["stratified"] = u.stratified;
  j["sampled_refs"] = u.sampled_refs;
  json curve = json::array();
  for (const auto& p : u.curve) curve.push_back({static_cast<uint64_t>(std::llround(p.x)), p.y});
  j["lru_hit_rate"] = curve;
  j["lru_hit_rate_at"] = {{"1pct", u.hit_rate_1pct}, {"10pct", u.hit_rate_10pct}, {"50pct", u.hit_rate_50pct},
                          {"100pct", u.hit_rate_100pct}};
  const double diff = union_difference(t);
  j["differs"] = diff > kUnionDiffers;
  j["max_difference"] = diff;
  return j;
}

std::vector<std::string> union_lru_lines(const std::vector<model::TableView>& tables) {
  std::vector<std::string> out;
  auto pct = [](double x) { return fmt::format("{:.1f}%", 100.0 * x); };
  for (const auto& t : tables) {
    if (!t.union_lru) continue;
    const stats::UnionLru& u = *t.union_lru;
    const std::string name = terminal_safe(t.name);
    if (!u.available) {
      out.push_back(fmt::format("{}: unavailable: {}", name, terminal_safe(u.why_not)));
      continue;
    }
    const std::string how =
        u.rate < 1.0 ? fmt::format("{} ranks, sample rate {:.3g}{}", u.ranks, u.rate, u.stratified ? ", stratified" : "")
                     : fmt::format("{} ranks, every reference", u.ranks);
    if (union_difference(t) <= kUnionDiffers) {
      out.push_back(fmt::format("{}: within 0.5 points of the per-rank curve ({})", name, how));
      continue;
    }
    out.push_back(fmt::format("{}: model-parallel LRU1% {} (per rank {}), LRU10% {} (per rank {}); {}", name, pct(u.hit_rate_1pct),
                              pct(t.summary.lru_hit_rate_1pct), pct(u.hit_rate_10pct), pct(t.summary.lru_hit_rate_10pct), how));
  }
  return out;
}

}  // namespace edo::cli
