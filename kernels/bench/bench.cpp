#include "edo/kernels/bench.h"

#include <omp.h>
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "edo/kernels/backend.h"
#include "edo/kernels/cpu.h"
#include "edo/kernels/cuda.h"
#include "edo/kernels/encode.h"
#include "edo/kernels/host_buffer.h"
#include "edo/kernels/workload.h"

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

// STREAM triad a = b + s*c over three arrays; one pass() per call so that the benchmark can
// interleave it with the strategies' passes (same minutes of this shared machine).
class Triad {
 public:
  Triad(int threads, std::uint64_t bytes_per_array)
      : n_(bytes_per_array / sizeof(double)), nt_(std::max(1, threads)), ab_(n_ * 8, false), bb_(n_ * 8, false), cb_(n_ * 8, false) {
    double* a = ab_.as<double>();
    double* b = bb_.as<double>();
    double* c = cb_.as<double>();
    const std::int64_t N = static_cast<std::int64_t>(n_);
#pragma omp parallel for num_threads(nt_) schedule(static)
    for (std::int64_t i = 0; i < N; ++i) {
      a[i] = 0;
      b[i] = 1;
      c[i] = 2;
    }
    pass();  // warm-up: page faults, thread start
  }
  double pass() {
    double* a = ab_.as<double>();
    const double* b = bb_.as<double>();
    const double* c = cb_.as<double>();
    const std::int64_t N = static_cast<std::int64_t>(n_);
    const double s = 3.0;
    const auto t0 = Clock::now();
#pragma omp parallel for num_threads(nt_) schedule(static)
    for (std::int64_t i = 0; i < N; ++i) a[i] = b[i] + s * c[i];
    const double t = seconds_since(t0);
    if (a[N / 2] != 7.0) throw std::runtime_error("triad: wrong result");
    return 3.0 * static_cast<double>(n_) * 8 / t / 1e9;
  }

 private:
  std::uint64_t n_;
  int nt_;
  HostBuffer ab_, bb_, cb_;
};

// Available memory (MemAvailable), for sizing the groups of tables measured together.
std::uint64_t available_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 8ull << 30;
  char line[256];
  std::uint64_t kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %lu kB", &kb) == 1) break;
  std::fclose(f);
  return kb ? kb * 1024 : 8ull << 30;
}

}  // namespace

double triad_gbs(int threads, std::uint64_t bytes_per_array, int reps) {
  Triad t(threads, bytes_per_array);
  std::vector<double> gbs;
  for (int r = 0; r < reps; ++r) gbs.push_back(t.pass());
  return median(gbs);
}

double memory_latency_ns(std::uint64_t bytes, std::uint64_t steps) {
  // A random cycle through every 64-byte line of a huge-page buffer (Sattolo's shuffle, so
  // one cycle covers all lines): each load's address is the previous load's value.
  const std::uint64_t lines = std::max<std::uint64_t>(2, bytes / 64);
  HostBuffer buf(lines * 64, false);
  auto* p = buf.as<std::uint64_t>();
  std::vector<std::uint32_t> order(lines);
  for (std::uint64_t i = 0; i < lines; ++i) order[i] = static_cast<std::uint32_t>(i);
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (std::uint64_t i = lines - 1; i > 0; --i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::swap(order[i], order[x % i]);
  }
  for (std::uint64_t i = 0; i < lines; ++i) p[std::uint64_t{order[i]} * 8] = std::uint64_t{order[(i + 1) % lines]} * 8;
  std::uint64_t at = 0;
  for (std::uint64_t i = 0; i < std::min<std::uint64_t>(steps, 1u << 16); ++i) at = p[at];  // warm the TLB
  const auto t0 = Clock::now();
  for (std::uint64_t i = 0; i < steps; ++i) at = p[at];
  const double t = seconds_since(t0);
  if (at >= lines * 8) throw std::runtime_error("latency: broken cycle");
  return t / static_cast<double>(steps) * 1e9;
}

BenchReport run_bench(const BenchConfig& cfg) {
  if (cfg.backend != "cpu" && cfg.backend != "cuda") throw std::invalid_argument("backend must be cpu or cuda");
  if (cfg.rows == 0 || cfg.dim == 0) throw std::invalid_argument("rows and dim must be positive");
  if (cfg.pooling == 0 || cfg.batch < cfg.pooling) throw std::invalid_argument("batch must be at least one bag of `pooling` indices");
  if (cfg.sets < 1 || cfg.reps < 1 || cfg.warmup < 0) throw std::invalid_argument("sets and reps must be >= 1");
  const auto specs = StrategySpec::parse_list(cfg.strategies);
  for (const auto& spec : specs) check_spec(spec, cfg.rows, cfg.dim);  // before minutes of work
  auto backend = make_backend(cfg.backend);  // "no CUDA device: ..." before any work
  const bool on_cpu = cfg.backend == "cpu";
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
  if (cfg.pin) cpu::pin_threads();
  rep.isa = backend->description();

  // CPU: the triad runs interleaved with the strategies' passes (below); CUDA: up front.
  std::unique_ptr<Triad> triad;
  std::vector<double> triad_passes;
  rep.anchor_name = on_cpu ? "triad" : "d2d_copy";
  if (cfg.anchor) {
    if (on_cpu) {
      say("anchor: STREAM triad (" + std::to_string(rep.threads) + " threads) and memory latency");
      rep.latency_ns = memory_latency_ns(1ull << 30, 2'000'000);
      triad = std::make_unique<Triad>(rep.threads, 256ull << 20);
      triad_passes.push_back(triad->pass());
    } else {
      say("anchor: device-to-device copy");
      rep.anchor_gbs = cuda::d2d_copy_gbs();
    }
  }

  say("weights " + std::to_string(cfg.rows) + " x " + std::to_string(cfg.dim) + " fp32 (" +
      fmt_bytes(static_cast<double>(cfg.rows) * cfg.dim * 4) + "), index sets");
  HostBuffer wbuf(cfg.rows * cfg.dim * 4, false);
  float* w = wbuf.as<float>();
  random_weights(w, cfg.rows, cfg.dim, cfg.seed, 1.0f / std::sqrt(static_cast<float>(cfg.dim)));
  // One generator (core/stats' ZipfGenerator) draws every set: the hot rows are the same in all.
  const Workload work = Workload::fixed_bags(zipf_batches(cfg.rows, cfg.zipf, cfg.seed + 1, static_cast<std::uint64_t>(cfg.sets), cfg.batch),
                                             cfg.pooling);
  std::vector<std::uint64_t> counts(cfg.rows, 0);
  for (const auto& b : work.batches)
    for (auto i : b) ++counts[static_cast<std::uint64_t>(i)];

  // Tables are encoded, then measured in groups that fit in memory: in each repetition every
  // table of the group runs one gather pass and one bag pass (the order rotating), with a
  // triad pass between repetitions. The machine's speed drifts over seconds on a shared
  // host; interleaving puts every strategy and the anchor in the same minutes, so their
  // ratios hold even when the absolute figures move. On CUDA each table is measured alone
  // (device memory), timed with events.
  const double per_pass = static_cast<double>(work.indices());
  auto add_result = [&](BenchResult r) {  // rates measured: the row GB/s follow from them
    r.gather_gbs = r.gather_rows_per_s * r.bytes_per_row / 1e9;
    r.bag_gbs = r.bag_rows_per_s * r.bytes_per_row / 1e9;
    rep.results.push_back(std::move(r));
  };
  struct Entry {
    BenchResult r;
    std::unique_ptr<EncodedTable> table;
    std::unique_ptr<LoadedTable> loaded;
    std::vector<double> gather, bag;
  };
  std::vector<Entry> group;
  std::uint64_t group_bytes = 0;
  const std::uint64_t budget = !on_cpu ? 1 : (cfg.group_bytes ? cfg.group_bytes : available_bytes() / 3);
  auto measure_group = [&] {
    if (group.empty()) return;
    say("measure " + std::to_string(group.size()) + " strateg" + (group.size() == 1 ? "y" : "ies") + ", " +
        std::to_string(cfg.reps) + " interleaved repetitions");
    for (auto& e : group) {
      e.loaded = backend->load(*e.table, work);
      for (int i = 0; i < cfg.warmup; ++i) e.loaded->pass(false), e.loaded->pass(true);
      e.loaded->reset_stats();
    }
    for (int rep_i = 0; rep_i < cfg.reps; ++rep_i) {
      for (std::size_t k = 0; k < group.size(); ++k) {
        Entry& e = group[(k + static_cast<std::size_t>(rep_i)) % group.size()];
        for (int bag = 0; bag < 2; ++bag) (bag ? e.bag : e.gather).push_back(per_pass / e.loaded->pass(bag));
      }
      if (triad) triad_passes.push_back(triad->pass());
    }
    for (auto& e : group) {
      e.r.gather_rows_per_s = median(e.gather);
      e.r.bag_rows_per_s = median(e.bag);
      e.r.hit_rate = e.loaded->hit_rate();
      add_result(std::move(e.r));
    }
    group.clear();
    group_bytes = 0;
  };

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
    const std::uint64_t bytes = r.device_bytes + r.host_bytes;
    if (!group.empty() && group_bytes + bytes > budget) measure_group();
    group_bytes += bytes;
    group.push_back(Entry{std::move(r), std::move(table), nullptr, {}, {}});
  }
  measure_group();
  if (!triad_passes.empty()) rep.anchor_gbs = median(triad_passes);
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
  if (rep.latency_ns > 0) j["anchor"]["latency_ns"] = rep.latency_ns;
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
    std::snprintf(line, sizeof line, "anchor: %s %.1f GB/s%s\n", rep.anchor_name == "triad" ? "STREAM triad" : "device-to-device copy",
                  rep.anchor_gbs, rep.anchor_name == "triad" ? " (median of passes interleaved with the strategies')" : "");
    o << line;
    if (rep.latency_ns > 0) {
      // Little's law: random row reads at the triad rate need rate x latency bytes in flight.
      std::snprintf(line, sizeof line,
                    "memory latency %.0f ns: random rows at the triad rate need %.0f cache lines in flight (%.0f per thread)\n",
                    rep.latency_ns, rep.anchor_gbs * rep.latency_ns / 64.0,
                    rep.anchor_gbs * rep.latency_ns / 64.0 / std::max(1, rep.threads));
      o << line;
    }
    o << "\n";
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
