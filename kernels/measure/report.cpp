// The benchmark's reports: edo.bench/1 JSON and the text table.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "edo/kernels/bench.h"
#include "edo/model/profile_summary.h"

namespace edo::kernels {

nlohmann::json to_json(const BenchReport& rep) {
  nlohmann::json j;
  j["schema"] = "edo.bench/1";
  j["backend"] = rep.config.backend;
  j["threads"] = rep.threads;
  j["anchor"] = {{"name", rep.anchor_name}, {"gbs", rep.anchor_gbs}, {"bytes", rep.anchor_bytes}};
  if (rep.latency_ns > 0) j["anchor"]["latency_ns"] = rep.latency_ns;
  if (rep.h2d_gbs > 0) j["anchor"]["h2d_gbs"] = rep.h2d_gbs;
  if (rep.onchip_gbs > 0) j["anchor"]["onchip_gbs"] = rep.onchip_gbs;
  j["probes"] = nlohmann::json::array();
  for (const auto& p : rep.probes)
    j["probes"].push_back({{"read_bytes", p.read_bytes}, {"stride", p.stride}, {"rows_per_s", p.rows_per_s}});
  j["config"] = {{"rows", rep.config.rows},       {"dim", rep.config.dim},   {"batch", rep.config.batch},
                 {"pooling", rep.config.pooling}, {"distribution", rep.config.zipf > 0 ? "zipf" : "uniform"},
                 {"zipf", rep.config.zipf > 0 ? nlohmann::json(rep.config.zipf) : nlohmann::json(nullptr)},
                 {"sets", rep.config.sets},       {"reps", rep.config.reps}, {"seed", rep.config.seed},
                 {"kernels", rep.isa}};
  j["host"] = {{"cpus", rep.cpus}, {"load_before", rep.load_before}, {"load_after", rep.load_after}};
  j["results"] = nlohmann::json::array();
  for (const auto& r : rep.results) {
    nlohmann::json x;
    x["strategy"] = r.name;
    x["spec"] = r.strategy;
    x["params"] = r.params;
    x["device_bytes"] = r.device_bytes;
    x["host_bytes"] = r.host_bytes;
    x["bytes_per_row"] = r.bytes_per_row;
    x["device_bytes_per_row"] = static_cast<double>(r.device_bytes) / static_cast<double>(rep.config.rows);
    x["error"] = r.error;
    x["needs_retraining"] = r.needs_retraining;
    x["gather_rows_per_s"] = r.gather_rows_per_s;
    x["bag_rows_per_s"] = r.bag_rows_per_s;
    x["gather_gbs"] = r.gather_gbs;
    x["bag_gbs"] = r.bag_gbs;
    x["bag_vs_anchor"] = rep.anchor_gbs > 0 ? r.bag_gbs / rep.anchor_gbs : 0.0;
    x["access"] = {{"reads", r.access.reads},           {"read_bytes", r.access.read_bytes}, {"stride", r.access.stride},
                   {"index_bytes", r.access.index_bytes}, {"onchip_bytes", r.access.onchip_bytes},
                   {"sector_bytes", sector_bytes(r.access.read_bytes, r.access.stride)}};
    x["bound_rows_per_s"] = r.bound_rows_per_s;
    x["bound_basis"] = r.bound_basis;
    x["bag_vs_bound"] = r.bound_rows_per_s > 0 ? r.bag_rows_per_s / r.bound_rows_per_s : 0.0;
    if (r.hit_rate >= 0) {
      x["hit_rate"] = r.hit_rate;
      x["miss_gbs"] = r.miss_gbs;
      if (rep.h2d_gbs > 0) x["miss_vs_h2d"] = r.miss_gbs / rep.h2d_gbs;
    }
    x["encode_s"] = r.encode_s;
    j["results"].push_back(std::move(x));
  }
  return j;
}

std::string to_text(const BenchReport& rep) {
  std::ostringstream o;
  const auto& c = rep.config;
  const bool cpu = c.backend == "cpu";
  char line[512];
  std::snprintf(line, sizeof line, "edo bench: backend %s, %d thread%s, %s\n", c.backend.c_str(), rep.threads,
                rep.threads == 1 ? "" : "s", rep.isa.c_str());
  o << line;
  std::snprintf(line, sizeof line, "table %llu x %u fp32 (%s), batch %llu indices = %llu bags x %u, %s, %d index sets, median of %d\n",
                static_cast<unsigned long long>(c.rows), c.dim, model::format_bytes(uint64_t(c.rows) * c.dim * 4).c_str(),
                static_cast<unsigned long long>(c.batch / c.pooling * c.pooling),
                static_cast<unsigned long long>(c.batch / c.pooling), c.pooling,
                c.zipf > 0 ? ("zipf " + std::to_string(c.zipf).substr(0, 4)).c_str() : "uniform", c.sets, c.reps);
  o << line;
  if (cpu && rep.cpus > 0 && std::max(rep.load_before, rep.load_after) > rep.cpus * 0.75) {
    std::snprintf(line, sizeof line,
                  "warning: load average %.1f / %.1f on %d CPUs: other processes compete for the CPUs, numbers are unreliable\n",
                  rep.load_before, rep.load_after, rep.cpus);
    o << line;
  }
  if (rep.anchor_gbs > 0 && cpu) {
    std::snprintf(line, sizeof line,
                  "bound: the random-row read probe on the same index sets, rows of each strategy's size, interleaved with its passes\n");
    o << line;
    for (const auto& p : rep.probes) {
      std::snprintf(line, sizeof line, "  probe %5.0f B rows (stride %5.0f B): %8.1f M rows/s = %6.2f GB/s\n", p.read_bytes, p.stride,
                    p.rows_per_s / 1e6, p.rows_per_s * p.read_bytes / 1e9);
      o << line;
    }
    std::snprintf(line, sizeof line, "context: STREAM triad %.1f GB/s, memory latency %.0f ns (buffers sized to the table: %s)\n",
                  rep.anchor_gbs, rep.latency_ns, model::format_bytes(uint64_t(rep.anchor_bytes)).c_str());
    o << line << "\n";
  } else if (rep.anchor_gbs > 0) {
    std::snprintf(line, sizeof line,
                  "bound: bytes moved / device-to-device copy %.0f GB/s (32-byte sectors counted); on-chip bytes / shared memory "
                  "%.0f GB/s; offload misses / pinned host-to-device copy %.1f GB/s\n\n",
                  rep.anchor_gbs, rep.onchip_gbs, rep.h2d_gbs);
    o << line;
  } else {
    o << "bound: not measured (--no-anchor)\n\n";
  }
  std::snprintf(line, sizeof line, "%-26s %11s %8s %9s %10s %10s %9s %10s %7s %6s\n", "strategy", "device", "B/row", "error",
                "gather M/s", "bag M/s", "bag GB/s", "bound M/s", "vs bnd", "hit");
  o << line;
  for (const auto& r : rep.results) {
    char err[32], hit[16];
    std::snprintf(err, sizeof err, r.error < 1e-4 && r.error > 0 ? "%.1e" : "%.4f", r.error);
    if (r.hit_rate >= 0) std::snprintf(hit, sizeof hit, "%.3f", r.hit_rate);
    else std::snprintf(hit, sizeof hit, "-");
    std::snprintf(line, sizeof line, "%-26s %11s %8.1f %9s %10.1f %10.1f %9.2f %10.1f %6.2fx %6s%s\n", r.strategy.c_str(),
                  model::format_bytes(uint64_t(r.device_bytes)).c_str(), r.bytes_per_row, err, r.gather_rows_per_s / 1e6,
                  r.bag_rows_per_s / 1e6, r.bag_gbs, r.bound_rows_per_s / 1e6,
                  r.bound_rows_per_s > 0 ? r.bag_rows_per_s / r.bound_rows_per_s : 0.0, hit, r.needs_retraining ? "  (needs retraining)" : "");
    o << line;
  }
  for (const auto& r : rep.results) {
    if (r.hit_rate < 0) continue;
    std::snprintf(line, sizeof line, "%s: hit rate %.3f, misses read from host memory at %.2f GB/s%s\n", r.strategy.c_str(), r.hit_rate,
                  r.miss_gbs, rep.h2d_gbs > 0 ? (" = " + std::to_string(r.miss_gbs / rep.h2d_gbs).substr(0, 4) + "x the host-to-device copy").c_str() : "");
    o << line;
  }
  o << "\nB/row: table bytes read per looked-up row; bag GB/s counts those bytes; error: access-weighted relative L2 vs fp32;\n"
       "bound: the rows/s the strategy's memory traffic allows on this machine (--json: bound_basis says how).\n";
  return o.str();
}

}  // namespace edo::kernels
