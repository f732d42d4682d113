#include "kernels/cpu/measure.h"

#include <omp.h>
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/host_buffer.h"
#include "kernels/cpu/thread_team.h"
#include "kernels/cpu/index_gen.h"
#include "kernels/cuda/cuda_backend.h"

namespace edo::kernels {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
std::string fmt_bytes(double b) {
  char buf[64];
  if (b >= 1ull << 30) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1ull << 30));
  else if (b >= 1 << 20) std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1 << 20));
  else if (b >= 1 << 10) std::snprintf(buf, sizeof buf, "%.1f KiB", b / (1 << 10));
  else std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}
}  // namespace

double triad_gbs(int threads, std::uint64_t bytes_per_array, int reps) {
  const std::uint64_t n = bytes_per_array / sizeof(double);
  HostBuffer ab(n * 8, false), bb(n * 8, false), cb(n * 8, false);
  double* a = ab.as<double>();
  double* b = bb.as<double>();
  double* c = cb.as<double>();
  const int nt = std::max(1, threads);
  const std::int64_t N = static_cast<std::int64_t>(n);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (std::int64_t i = 0; i < N; ++i) {
    a[i] = 0;
    b[i] = 1;
    c[i] = 2;
  }
  std::vector<double> gbs;
  const double s = 3.0;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = Clock::now();
#pragma omp parallel for num_threads(nt) schedule(static)
    for (std::int64_t i = 0; i < N; ++i) a[i] = b[i] + s * c[i];
    const double t = seconds_since(t0);
    if (r > 0) gbs.push_back(3.0 * static_cast<double>(n) * 8 / t / 1e9);  // first pass is a warm-up
  }
  if (a[N / 2] != 7.0) throw std::runtime_error("triad: wrong result");
  return median(gbs);
}

BenchReport run_bench(const BenchConfig& cfg) {
  if (cfg.backend != "cpu" && cfg.backend != "cuda") throw std::invalid_argument("backend must be cpu or cuda");
  if (cfg.rows == 0 || cfg.dim == 0) throw std::invalid_argument("rows and dim must be positive");
  if (cfg.pooling == 0 || cfg.batch < cfg.pooling) throw std::invalid_argument("batch must be at least one bag of `pooling` indices");
  if (cfg.sets < 1 || cfg.reps < 1 || cfg.warmup < 0) throw std::invalid_argument("sets and reps must be >= 1");
  const auto specs = StrategySpec::parse_list(cfg.strategies);
  if (cfg.backend == "cuda") {
    const std::string st = cuda::device_status();
    if (!st.empty()) throw std::runtime_error(st);
  }
  auto say = [&](const std::string& s) {
    if (cfg.progress) cfg.progress(s);
  };
  BenchReport rep;
  rep.config = cfg;
  {
    double l[1];
    if (getloadavg(l, 1) == 1) rep.load_before = l[0];
    rep.cpus = static_cast<int>(cpu::allowed_cpus().size());
  }
  if (cfg.threads > 0) set_num_threads(cfg.threads);
  rep.threads = num_threads();
  if (cfg.pin) pin_threads();
  rep.isa = cfg.backend == "cpu" ? std::string("cpu kernels: ") + cpu::kernels().isa : cuda::device_description();

  if (cfg.anchor) {
    if (cfg.backend == "cpu") {
      say("anchor: STREAM triad, " + std::to_string(rep.threads) + " threads");
      rep.anchor_name = "triad";
      rep.anchor_gbs = triad_gbs(rep.threads);
    } else {
      say("anchor: device-to-device copy");
      rep.anchor_name = "d2d_copy";
      rep.anchor_gbs = cuda::d2d_copy_gbs();
    }
  } else {
    rep.anchor_name = cfg.backend == "cpu" ? "triad" : "d2d_copy";
  }

  say("weights " + std::to_string(cfg.rows) + " x " + std::to_string(cfg.dim) + " fp32 (" +
      fmt_bytes(static_cast<double>(cfg.rows) * cfg.dim * 4) + "), index sets");
  HostBuffer wbuf(cfg.rows * cfg.dim * 4, false);
  float* w = wbuf.as<float>();
  random_weights(w, cfg.rows, cfg.dim, cfg.seed, 1.0f / std::sqrt(static_cast<float>(cfg.dim)));
  const std::uint64_t B = cfg.batch / cfg.pooling * cfg.pooling;  // whole bags
  const std::int64_t n_bags = static_cast<std::int64_t>(B / cfg.pooling);
  std::vector<std::int64_t> perm;
  if (cfg.zipf > 0) perm = random_permutation(cfg.rows, cfg.seed + 1);
  std::vector<std::vector<std::int64_t>> sets;
  std::vector<std::uint64_t> counts(cfg.rows, 0);
  for (int s = 0; s < cfg.sets; ++s) {
    sets.push_back(generate_indices(cfg.rows, B, cfg.zipf, cfg.seed + 100 + static_cast<std::uint64_t>(s), perm));
    for (auto i : sets.back()) ++counts[static_cast<std::uint64_t>(i)];
  }
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(n_bags) + 1);
  for (std::int64_t b = 0; b <= n_bags; ++b) offsets[b] = b * cfg.pooling;
  std::vector<float> out(B * cfg.dim);

  for (const auto& spec : specs) {
    say("strategy " + spec.to_string() + ": encode");
    BenchResult r;
    r.strategy = spec.to_string();
    r.name = spec.name;
    EncodeOptions eo;
    eo.counts = counts.data();
    eo.seed = cfg.seed;
    auto t0 = Clock::now();
    auto table = encode(spec, w, cfg.rows, cfg.dim, eo);
    r.encode_s = seconds_since(t0);
    r.params = table->params();
    r.device_bytes = table->device_bytes();
    r.host_bytes = table->host_bytes();
    r.bytes_per_row = table->bytes_read_per_row();
    r.needs_retraining = table->needs_retraining();
    r.error = reconstruction_error(*table, w, counts.data());
    say("strategy " + spec.to_string() + ": measure");
    if (cfg.backend == "cpu") {
      const double per_pass = static_cast<double>(B) * cfg.sets;
      auto pass = [&](bool bag) {
        for (const auto& s : sets) {
          if (bag) table->bag(s.data(), static_cast<std::int64_t>(B), offsets.data(), n_bags, nullptr, Pooling::Sum, out.data());
          else table->gather(s.data(), static_cast<std::int64_t>(B), out.data());
        }
      };
      for (int bag = 0; bag < 2; ++bag) {
        for (int i = 0; i < cfg.warmup; ++i) pass(bag);
        table->reset_stats();
        std::vector<double> rate;
        for (int i = 0; i < cfg.reps; ++i) {
          const auto ts = Clock::now();
          pass(bag);
          rate.push_back(per_pass / seconds_since(ts));
        }
        (bag ? r.bag_rows_per_s : r.gather_rows_per_s) = median(rate);
        if (bag) r.hit_rate = table->hit_rate();
      }
    } else {
      const auto t = cuda::time_lookups(*table, sets, cfg.pooling, cfg.reps, cfg.warmup);
      r.gather_rows_per_s = t.gather_rows_per_s;
      r.bag_rows_per_s = t.bag_rows_per_s;
      r.hit_rate = t.hit_rate;
    }
    r.gather_gbs = r.gather_rows_per_s * r.bytes_per_row / 1e9;
    r.bag_gbs = r.bag_rows_per_s * r.bytes_per_row / 1e9;
    rep.results.push_back(std::move(r));
  }
  double l[1];
  if (getloadavg(l, 1) == 1) rep.load_after = l[0];
  return rep;
}

nlohmann::json to_json(const BenchReport& rep) {
  nlohmann::json j;
  j["schema"] = "edo.bench/1";
  j["backend"] = rep.config.backend;
  j["threads"] = rep.threads;
  j["anchor"] = {{"name", rep.anchor_name}, {"gbs", rep.anchor_gbs}};
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
    if (r.hit_rate >= 0) x["hit_rate"] = r.hit_rate;
    x["encode_s"] = r.encode_s;
    j["results"].push_back(std::move(x));
  }
  return j;
}

std::string to_text(const BenchReport& rep) {
  std::ostringstream o;
  const auto& c = rep.config;
  char line[512];
  std::snprintf(line, sizeof line, "edo bench: backend %s, %d thread%s, %s\n", c.backend.c_str(), rep.threads,
                rep.threads == 1 ? "" : "s", rep.isa.c_str());
  o << line;
  std::snprintf(line, sizeof line, "table %llu x %u fp32 (%s), batch %llu indices = %llu bags x %u, %s, %d index sets, median of %d\n",
                static_cast<unsigned long long>(c.rows), c.dim, fmt_bytes(static_cast<double>(c.rows) * c.dim * 4).c_str(),
                static_cast<unsigned long long>(c.batch / c.pooling * c.pooling),
                static_cast<unsigned long long>(c.batch / c.pooling), c.pooling,
                c.zipf > 0 ? ("zipf " + std::to_string(c.zipf).substr(0, 4)).c_str() : "uniform", c.sets, c.reps);
  o << line;
  if (rep.cpus > 0 && std::max(rep.load_before, rep.load_after) > rep.cpus * 0.75) {
    std::snprintf(line, sizeof line,
                  "warning: load average %.1f / %.1f on %d CPUs: other processes compete for the CPUs, numbers are unreliable\n",
                  rep.load_before, rep.load_after, rep.cpus);
    o << line;
  }
  if (rep.anchor_gbs > 0) {
    std::snprintf(line, sizeof line, "anchor: %s %.1f GB/s\n\n", rep.anchor_name == "triad" ? "STREAM triad" : "device-to-device copy", rep.anchor_gbs);
    o << line;
  } else {
    o << "anchor: not measured\n\n";
  }
  std::snprintf(line, sizeof line, "%-26s %11s %8s %9s %10s %10s %9s %7s %6s\n", "strategy", "device", "B/row", "error",
                "gather M/s", "bag M/s", "bag GB/s", "vs anc", "hit");
  o << line;
  for (const auto& r : rep.results) {
    char err[32], hit[16];
    std::snprintf(err, sizeof err, r.error < 1e-4 && r.error > 0 ? "%.1e" : "%.4f", r.error);
    if (r.hit_rate >= 0) std::snprintf(hit, sizeof hit, "%.3f", r.hit_rate);
    else std::snprintf(hit, sizeof hit, "-");
    std::snprintf(line, sizeof line, "%-26s %11s %8.1f %9s %10.1f %10.1f %9.2f %6.2fx %6s%s\n", r.strategy.c_str(),
                  fmt_bytes(static_cast<double>(r.device_bytes)).c_str(), r.bytes_per_row, err, r.gather_rows_per_s / 1e6,
                  r.bag_rows_per_s / 1e6, r.bag_gbs, rep.anchor_gbs > 0 ? r.bag_gbs / rep.anchor_gbs : 0.0, hit,
                  r.needs_retraining ? "  (needs retraining)" : "");
    o << line;
  }
  o << "\nB/row: table bytes read per looked-up row; bag GB/s counts those bytes; error: access-weighted relative L2 vs fp32.\n";
  return o.str();
}

}  // namespace edo::kernels
