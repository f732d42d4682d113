#include "edo/tuner/torchrec_facts.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "edo/db/profile_store.h"
#include "edo/model/profile_summary.h"

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
}

}  // namespace

std::map<std::string, TorchRecFacts> torchrec_facts(const model::Profile& profile) {
  std::map<std::string, TorchRecFacts> out;
  uint64_t steps = 0;
  for (const auto& s : profile.sessions) steps += s.steps;  // as the tuner counts them (workload.cpp)
  for (const auto& v : model::table_views(profile)) {
    TorchRecFacts f;
    auto note = profile.metadata.find(kNotePrefix + v.table_name);
    if (note != profile.metadata.end()) read_note(note->second, f);
    f.lookups = v.summary.lookups;
    f.steps = steps;
    const auto& curve = v.summary.lru_curve;
    if (!curve.empty() && v.rows > 0 && f.lookups > 0) {
      std::vector<std::pair<double, double>> hit;
      for (const auto& p : curve) hit.push_back({p.x, p.y});
      const double full = std::max_element(curve.begin(), curve.end(), [](auto& a, auto& b) { return a.x < b.x; })->y;
      // TorchRec's EmbeddingOffloadStats rescales the hit curve to 1 at the whole table (cold
      // misses left out): miss(clf) = 1 - hit(clf * rows) / hit(rows).
      double area = 0, px = 0, py = 1;
      for (const auto& p : curve) {
        const double lf = p.x / static_cast<double>(v.rows);
        if (lf <= px || lf > 1) continue;
        const double miss = full > 0 ? std::clamp(1.0 - p.y / full, 0.0, 1.0) : 1.0;
        f.miss_curve.push_back({lf, miss});
        area += (lf - px) * (py + miss) / 2;
        px = lf;
        py = miss;
      }
      if (px < 1) area += (1 - px) * py / 2;
      f.cacheability = area;
      const double per_step = static_cast<double>(f.lookups) / static_cast<double>(std::max<uint64_t>(1, steps));
      f.expected_lookups = distinct_in_window(hit, per_step, static_cast<double>(v.rows));
    }
    out[v.table_name] = std::move(f);
  }
  return out;
}

std::map<std::string, TorchRecFacts> torchrec_facts_of_file(const std::string& path) {
  if (!db::is_sqlite_file(path)) return {};
  db::ProfileStore store(path, db::ProfileStore::Mode::kReadOnly);
  return torchrec_facts(store.load());
}

}  // namespace edo::tuner
