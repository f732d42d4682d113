#include "edo/tuner/torchrec_facts.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "edo/model/profile_summary.h"
#include "cache_replay.h"

namespace edo::tuner {
namespace {

constexpr const char* kNotePrefix = "torchrec.table.";

// The hook's note: {"config", "features", "bags", ...}. A malformed one is ignored (the table
// then falls back to the module-path rule), never fatal: metadata is free-form.
void read_note(const std::string& text, TorchRecFacts& f) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return;
  if (j.contains("config") && j["config"].is_string()) f.config = j["config"].get<std::string>();
  if (j.contains("features") && j["features"].is_array())
    for (const auto& x : j["features"])
      if (x.is_string()) f.features.push_back(x.get<std::string>());
  if (j.contains("bags") && j["bags"].is_number_unsigned()) f.bags = j["bags"].get<uint64_t>();
  // Per feature, from the KeyedJaggedTensor (profiler/python/edo/facts/_torchrec.py): kept only when
  // both lists are whole (one unsigned count per feature), else the table's average is used.
  auto counts_of = [&](const char* key) {
    std::vector<uint64_t> out;
    if (!j.contains(key) || !j[key].is_array() || j[key].size() != f.features.size()) return out;
    for (const auto& x : j[key]) {
      if (!x.is_number_unsigned()) return std::vector<uint64_t>{};
      out.push_back(x.get<uint64_t>());
    }
    return out;
  };
  f.feature_lookups = counts_of("feature_lookups");
  f.feature_bags = counts_of("feature_bags");
  if (f.feature_lookups.empty() || f.feature_bags.empty()) f.feature_lookups.clear(), f.feature_bags.clear();
}

// Load factors the miss curve is given at: cache sizes of rows^(i/kSteps) rows (geometric: the
// small caches an offload picks are where the curve is steepest), each once, below the rows.
std::vector<uint64_t> torchrec_curve_sizes(uint64_t rows) {
  constexpr int kSteps = 48;
  std::vector<uint64_t> out;
  for (int i = 0; i < kSteps; ++i) {
    const auto k = static_cast<uint64_t>(std::llround(std::pow(static_cast<double>(rows), static_cast<double>(i) / kSteps)));
    if (k >= 1 && k < rows && (out.empty() || k > out.back())) out.push_back(k);
  }
  return out;
}

}  // namespace

uint64_t recorded_steps(const model::Profile& profile) {
  uint64_t steps = 0;
  for (const auto& s : profile.sessions) steps += s.steps;  // as the tuner counts them (workload.cpp)
  return steps;
}

TorchRecFacts torchrec_facts_of_view(const model::Profile& profile, const model::TableView& v, const stats::TableAggregate& aggregate,
                                     uint64_t steps) {
  TorchRecFacts f;
  auto note = profile.metadata.find(kNotePrefix + v.table_name);
  if (note != profile.metadata.end()) read_note(note->second, f);
  f.lookups = v.summary.lookups;
  f.steps = steps;
  f.rows = v.rows;
  const auto& curve = v.summary.lru_curve;
  if (curve.empty() || v.rows == 0 || f.lookups == 0) return f;
  std::vector<std::pair<double, double>> hit;
  for (const auto& p : curve) hit.push_back({p.x, p.y});
  const double rows = static_cast<double>(v.rows);
  // The miss rate over all lookups, compulsory misses included: held out (the replay the
  // plan scores offloads with) when the recording kept its order, else the recorded curve.
  std::string why_not;
  if (const auto replay = CacheReplay::of(aggregate, why_not)) {
    f.heldout = true;
    for (uint64_t k : torchrec_curve_sizes(v.rows))
      f.miss_curve.push_back({static_cast<double>(k) / rows, std::clamp(1.0 - replay->lru_hit_rate(k), 0.0, 1.0)});
  } else {
    for (const auto& p : curve) {
      const double lf = p.x / rows;
      if (lf <= 0 || lf >= 1 || (!f.miss_curve.empty() && lf <= f.miss_curve.back().first)) continue;
      f.miss_curve.push_back({lf, std::clamp(1.0 - p.y, 0.0, 1.0)});
    }
  }
  // Cacheability: the area under the miss curve from load factor 0 (miss 1) to 1 (the last
  // point's rate held: compulsory misses stay).
  double area = 0, px = 0, py = 1;
  for (const auto& [lf, miss] : f.miss_curve) {
    area += (lf - px) * (py + miss) / 2;
    px = lf;
    py = miss;
  }
  area += (1 - px) * py;
  f.cacheability = std::clamp(area, 0.0, 1.0);
  const double per_step = static_cast<double>(f.lookups) / static_cast<double>(std::max<uint64_t>(1, steps));
  f.expected_lookups = per_step;
  f.distinct_lookups = distinct_in_window(hit, per_step, rows);
  return f;
}

std::map<std::string, TorchRecFacts> torchrec_facts(const model::Profile& profile) {
  std::map<std::string, TorchRecFacts> out;
  const uint64_t steps = recorded_steps(profile);
  for (const auto& v : model::table_views(profile)) out[v.table_name] = torchrec_facts_of_view(profile, v, v.aggregate, steps);
  return out;
}

}  // namespace edo::tuner
