// devmodel_check BENCH.json...: the device model with the figures of the machine a bench ran
// on (edo/tuner/device_profile.h device_from_json: a CPU bench gives 64-byte lines and its
// triad, a CUDA bench its sectors and copies) against that bench's measured gather rows/s,
// strategy by strategy: modelled and measured rows/s, their ratio, and how often the model
// orders two strategies as the measurement does (pairs in agreement, Spearman's rho).
//
//   devmodel_check [--min-agreement F] bench.json...   exit 1 when a file's pair agreement < F
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "edo/tuner/device_model.h"
#include "edo/tuner/device_profile.h"

namespace {

struct Row {
  std::string spec;
  double modelled = 0, measured = 0;  // rows/s
};

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size(); ++i) r[idx[i]] = static_cast<double>(i + 1);
  return r;
}

int check_one(const nlohmann::json& doc, const std::string& path, double min_agreement) {
  const edo::tuner::DeviceProfile d = edo::tuner::device_from_json(doc, path);
  const auto dim = doc["config"]["dim"].get<uint32_t>();
  std::vector<Row> rows;
  for (const auto& r : doc["results"]) {
    const std::string spec = r["spec"].get<std::string>();
    const double hit = r.contains("hit_rate") ? r["hit_rate"].get<double>() : 0.0;
    edo::tuner::LookupTraffic t;
    try {
      t = edo::tuner::lookup_traffic(spec, dim, hit, d.sector_bytes);
    } catch (const std::exception&) {
      continue;
    }
    // Per lookup, launches aside (the bench times many batches per pass).
    const double n = 1e6;
    const double s = (edo::tuner::modelled_step_us(t, n, d) - t.launches * d.launch_us) / 1e6 / n;
    rows.push_back({spec, 1.0 / s, r["gather_rows_per_s"].get<double>()});
  }
  std::printf("%s\n  profile: %s, %.3f G sectors/s of %g B, streams %.1f GB/s\n", path.c_str(), d.name.c_str(),
              d.sectors_per_s() / 1e9, d.sector_bytes, d.memory_gbs);
  std::printf("  %-34s %14s %14s %9s\n", "strategy", "modelled M/s", "measured M/s", "meas/mod");
  for (const auto& r : rows)
    std::printf("  %-34s %14.1f %14.1f %9.2f\n", r.spec.c_str(), r.modelled / 1e6, r.measured / 1e6, r.measured / r.modelled);
  size_t pairs = 0, agree = 0;
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = i + 1; j < rows.size(); ++j) {
      const double dm = rows[i].modelled - rows[j].modelled, dx = rows[i].measured - rows[j].measured;
      if (dm == 0) continue;  // the model calls them equal: no order to check
      ++pairs;
      agree += (dm > 0) == (dx > 0);
    }
  std::vector<double> mod, mea;
  for (const auto& r : rows) {
    mod.push_back(r.modelled);
    mea.push_back(r.measured);
  }
  const auto rm = ranks(mod), rx = ranks(mea);
  double d2 = 0;
  for (size_t i = 0; i < rows.size(); ++i) d2 += (rm[i] - rx[i]) * (rm[i] - rx[i]);
  const double n = static_cast<double>(rows.size());
  const double rho = n > 1 ? 1 - 6 * d2 / (n * (n * n - 1)) : 1;
  const double agreement = pairs ? static_cast<double>(agree) / static_cast<double>(pairs) : 1;
  std::printf("  pairs ordered as measured: %zu of %zu (%.2f); Spearman rho %.2f\n", agree, pairs, agreement, rho);
  return agreement + 1e-12 < min_agreement ? 1 : 0;
}

// A file holds one edo.bench/1 document or a list of them (bench/results keeps runs together).
int check(const std::string& path, double min_agreement) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto doc = nlohmann::json::parse(ss.str(), nullptr, false);
  if (doc.is_discarded()) {
    std::fprintf(stderr, "devmodel_check: %s: not JSON\n", path.c_str());
    return 2;
  }
  if (!doc.is_array()) return check_one(doc, path, min_agreement);
  int status = 0;
  for (size_t i = 0; i < doc.size(); ++i) status = std::max(status, check_one(doc[i], path + "[" + std::to_string(i) + "]", min_agreement));
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  double min_agreement = 0;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--min-agreement" && i + 1 < argc) min_agreement = std::atof(argv[++i]);
    else files.push_back(a);
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: devmodel_check [--min-agreement F] bench.json...\n");
    return 2;
  }
  int status = 0;
  for (const auto& f : files) {
    try {
      status = std::max(status, check(f, min_agreement));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "devmodel_check: %s: %s\n", f.c_str(), e.what());
      status = 2;
    }
  }
  return status;
}
