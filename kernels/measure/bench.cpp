// run_bench(): encode synthetic weights with every strategy, time gather and bag on the chosen
// backend, and measure each strategy's bound in the same run (bench.h says which).
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>

#include "measure/anchors.h"
#include "edo/kernels/backend.h"
#include "edo/kernels/bench.h"
#include "edo/kernels/cpu.h"
#include "edo/kernels/cuda.h"
#include "edo/kernels/encode.h"
#include "edo/kernels/host_buffer.h"
#include "edo/kernels/workload.h"
#include "edo/model/profile_summary.h"
#include "stopwatch.h"

namespace edo::kernels {

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

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

// Rows the kernels prefetch ahead (kernels/cpu: 8 KiB of rows, 16..64 rows).
int kernel_distance(double read_bytes) { return static_cast<int>(std::clamp(8192.0 / std::max(1.0, read_bytes), 16.0, 64.0)); }

// The random-row probes of a run, one per (read bytes, stride, entries); each pass measures
// the kernels' prefetch distance and twice that and keeps the faster (the probe is the best
// this machine does, not a copy of the kernels' choice).
class Probes {
 public:
  Probes(const std::uint8_t* weights, std::uint64_t weight_bytes, int threads)
      : w_(weights), wb_(weight_bytes), threads_(threads) {}
  void need(const AccessModel& m) {
    const Key k{m.read_bytes, m.stride, m.entries};
    if (probes_.count(k)) return;
    const std::uint8_t* base = w_;
    const auto bytes = static_cast<std::uint64_t>(static_cast<double>(m.entries) * m.stride + 64);
    if (bytes > wb_) {  // rows wider than fp32 ones (tiny dims): memory of its own
      own_.emplace_back(bytes, true);
      base = own_.back().data();
    }
    Entry e;
    const int dist = kernel_distance(m.read_bytes);
    e.near = std::make_unique<bench::RowProbe>(base, m.entries, m.read_bytes, m.stride, threads_, dist);
    e.far = std::make_unique<bench::RowProbe>(base, m.entries, m.read_bytes, m.stride, threads_, 2 * dist);
    probes_.emplace(k, std::move(e));
  }
  void pass_all(const std::vector<std::vector<std::int64_t>>& batches, bool timed) {
    for (auto& [k, e] : probes_) {
      const double r = std::max(e.near->pass(batches), e.far->pass(batches));
      if (timed) e.rates.push_back(r);
    }
  }
  double rate(const AccessModel& m) const {
    auto it = probes_.find(Key{m.read_bytes, m.stride, m.entries});
    return it == probes_.end() ? 0.0 : median(it->second.rates);
  }
  std::vector<BenchReport::Probe> report() const {
    std::vector<BenchReport::Probe> out;
    for (const auto& [k, e] : probes_) out.push_back({std::get<0>(k), std::get<1>(k), median(e.rates)});
    return out;
  }

 private:
  using Key = std::tuple<double, double, std::uint64_t>;
  struct Entry {
    std::unique_ptr<bench::RowProbe> near, far;
    std::vector<double> rates;
  };
  const std::uint8_t* w_;
  std::uint64_t wb_;
  int threads_;
  std::map<Key, Entry> probes_;
  std::vector<HostBuffer> own_;
};

// The CUDA bound of a strategy: seconds per row from each part of its traffic.
double cuda_bound(const AccessModel& m, const BenchReport& rep, std::string& basis) {
  if (rep.anchor_gbs <= 0) return 0;
  const double dev = 1.0 - m.host_fraction;
  const double dram_bytes = dev * m.reads * sector_bytes(m.read_bytes, m.stride) + (m.index_bytes > 0 ? 32.0 : 0.0);
  double s = dram_bytes / (rep.anchor_gbs * 1e9);
  char b[160];
  std::snprintf(b, sizeof b, "%.0f B of sectors / d2d copy", dram_bytes);
  basis = b;
  if (m.onchip_bytes > 0 && rep.onchip_gbs > 0) {
    s += m.onchip_bytes / (rep.onchip_gbs * 1e9);
    std::snprintf(b, sizeof b, " + %.0f B / shared memory", m.onchip_bytes);
    basis += b;
  }
  if (m.host_fraction > 0 && rep.h2d_gbs > 0) {
    const double host = m.host_fraction * std::ceil(m.read_bytes / 32) * 32;
    s += host / (rep.h2d_gbs * 1e9);
    std::snprintf(b, sizeof b, " + %.0f B misses / h2d copy", host);
    basis += b;
  }
  return s > 0 ? 1.0 / s : 0.0;
}

}  // namespace

namespace {

void check_config(const BenchConfig& cfg) {
  if (cfg.backend != "cpu" && cfg.backend != "cuda") throw std::invalid_argument("backend must be cpu or cuda");
  if (cfg.rows == 0 || cfg.dim == 0) throw std::invalid_argument("rows and dim must be positive");
  if (cfg.pooling == 0 || cfg.batch < cfg.pooling) throw std::invalid_argument("batch must be at least one bag of `pooling` indices");
  if (cfg.sets < 1 || cfg.reps < 1 || cfg.warmup < 0) throw std::invalid_argument("sets and reps must be >= 1");
}

using Say = std::function<void(const std::string&)>;

// Anchors sized to the work: the fp32 table's bytes, within [4 MiB, 1 GiB] (latency) and
// [4 MiB, 256 MiB] per triad array; on the GPU [256 MiB, 1 GiB] per copy buffer (beyond
// the L2 cache) and [64 MiB, 256 MiB] of pinned host memory. On the CPU the triad is kept: it
// runs again in every repetition, beside the strategies (its first pass is in `triad_passes`).
std::unique_ptr<bench::Triad> measure_anchors(const BenchConfig& cfg, double work, BenchReport& rep,
                                              std::vector<double>& triad_passes, const Say& say) {
  auto clamp_bytes = [&](double lo, double hi) { return static_cast<std::uint64_t>(std::clamp(work, lo, hi)); };
  std::unique_ptr<bench::Triad> triad;
  if (cfg.backend == "cpu") {
    const std::uint64_t lat = clamp_bytes(4 << 20, 1 << 30);
    say("anchors: memory latency over " + model::format_bytes(lat) + ", STREAM triad (" + std::to_string(rep.threads) +
        " threads)");
    rep.latency_ns = memory_latency_ns(lat, std::clamp<std::uint64_t>(lat / 64 * 2, 100'000, 2'000'000));
    triad = std::make_unique<bench::Triad>(rep.threads, clamp_bytes(4 << 20, 256 << 20));
    triad_passes.push_back(triad->pass());
    rep.anchor_bytes = std::max(lat, triad->bytes());
  } else {
    const std::uint64_t d2d = clamp_bytes(256 << 20, 1 << 30), h2d = clamp_bytes(64 << 20, 256 << 20);
    say("anchors: device-to-device copy (" + model::format_bytes(d2d) + "), pinned host-to-device copy (" +
        model::format_bytes(h2d) + ")");
    rep.anchor_gbs = cuda::d2d_copy_gbs(d2d);
    rep.h2d_gbs = cuda::h2d_copy_gbs(h2d);
    rep.onchip_gbs = cuda::device_info().onchip_gbs();
    rep.anchor_bytes = h2d;  // host memory; the copy buffers are on the device
  }
  return triad;
}

// One strategy encoded from the fp32 weights, with what encoding tells: bytes, error, access.
struct Encoded {
  BenchResult r;
  std::unique_ptr<EncodedTable> table;
};

Encoded encode_strategy(const StrategySpec& spec, const float* w, const std::vector<std::uint64_t>& counts,
                        const BenchConfig& cfg) {
  Encoded e;
  BenchResult& r = e.r;
  r.strategy = spec.to_string();
  r.name = spec.name;
  EncodeOptions eo;
  eo.counts = counts.data();
  eo.seed = cfg.seed;
  auto t0 = Clock::now();
  e.table = encode(spec, w, cfg.rows, cfg.dim, eo);
  r.encode_s = seconds_since(t0);
  r.params = e.table->params();
  r.device_bytes = e.table->device_bytes();
  r.host_bytes = e.table->host_bytes();
  r.bytes_per_row = e.table->bytes_read_per_row();
  r.needs_retraining = e.table->needs_retraining();
  r.error = reconstruction_error(*e.table, w, counts.data());
  r.access = access_model(*e.table);
  return e;
}

// Tables are encoded, then measured in groups that fit in memory: in each repetition every
// table of the group runs one gather pass and one bag pass (the order rotating), then the
// CPU's probes and a triad pass. The machine's speed drifts over seconds on a shared host;
// interleaving puts every strategy and its bound in the same minutes, so their ratios hold
// even when the absolute figures move. On CUDA each table is measured alone (device
// memory), timed with events.
class GroupMeasurer {
 public:
  GroupMeasurer(const BenchConfig& cfg, Backend& backend, const Workload& work, Probes& probes, bench::Triad* triad,
                std::vector<double>& triad_passes, Say say)
      : cfg_(cfg), backend_(backend), work_(work), probes_(probes), triad_(triad), triad_passes_(triad_passes),
        say_(std::move(say)), on_cpu_(cfg.backend == "cpu"),
        budget_(!on_cpu_ ? 1 : (cfg.group_bytes ? cfg.group_bytes : available_bytes() / 3)) {}

  // Adds an encoded table; the group so far is measured first when this one would not fit.
  void add(Encoded e) {
    const std::uint64_t bytes = e.r.device_bytes + e.r.host_bytes;
    if (!group_.empty() && group_bytes_ + bytes > budget_) measure();
    group_bytes_ += bytes;
    group_.push_back(Entry{std::move(e.r), std::move(e.table), nullptr, {}, {}});
  }
  // Measures what is left; the results, in the order added (bounds not filled in yet).
  std::vector<BenchResult> finish() {
    measure();
    return std::move(done_);
  }

 private:
  struct Entry {
    BenchResult r;
    std::unique_ptr<EncodedTable> table;
    std::unique_ptr<LoadedTable> loaded;
    std::vector<double> gather, bag;
  };

  void measure() {
    if (group_.empty()) return;
    say_("measure " + std::to_string(group_.size()) + " strateg" + (group_.size() == 1 ? "y" : "ies") + ", " +
         std::to_string(cfg_.reps) + " interleaved repetitions");
    const bool probing = on_cpu_ && cfg_.anchor;
    for (auto& e : group_) {
      e.loaded = backend_.load(*e.table, work_);
      for (int i = 0; i < cfg_.warmup; ++i) e.loaded->pass(false), e.loaded->pass(true);
      e.loaded->reset_stats();
      if (probing) probes_.need(e.r.access);
    }
    if (probing) probes_.pass_all(work_.batches, false);  // warm-up
    const double per_pass = static_cast<double>(work_.indices());
    for (int rep_i = 0; rep_i < cfg_.reps; ++rep_i) {
      for (std::size_t k = 0; k < group_.size(); ++k) {
        Entry& e = group_[(k + static_cast<std::size_t>(rep_i)) % group_.size()];
        for (int bag = 0; bag < 2; ++bag) (bag ? e.bag : e.gather).push_back(per_pass / e.loaded->pass(bag));
      }
      if (probing) probes_.pass_all(work_.batches, true);
      if (triad_) triad_passes_.push_back(triad_->pass());
    }
    for (auto& e : group_) {
      e.r.gather_rows_per_s = median(e.gather);
      e.r.bag_rows_per_s = median(e.bag);
      e.r.hit_rate = e.loaded->hit_rate();
      if (e.r.hit_rate >= 0) e.r.access.host_fraction = 1.0 - e.r.hit_rate;
      done_.push_back(std::move(e.r));
    }
    group_.clear();
    group_bytes_ = 0;
  }

  const BenchConfig& cfg_;
  Backend& backend_;
  const Workload& work_;
  Probes& probes_;
  bench::Triad* triad_;
  std::vector<double>& triad_passes_;
  Say say_;
  const bool on_cpu_;
  const std::uint64_t budget_;
  std::vector<Entry> group_;
  std::uint64_t group_bytes_ = 0;
  std::vector<BenchResult> done_;
};

// Bandwidths from the measured rates, and each strategy's bound from the probes (CPU) or the
// device's copy bandwidths (CUDA).
void fill_bounds(BenchResult& r, const BenchConfig& cfg, const BenchReport& rep, Probes& probes) {
  r.gather_gbs = r.gather_rows_per_s * r.bytes_per_row / 1e9;
  r.bag_gbs = r.bag_rows_per_s * r.bytes_per_row / 1e9;
  if (r.hit_rate >= 0) r.miss_gbs = r.bag_rows_per_s * (1.0 - r.hit_rate) * r.access.read_bytes / 1e9;
  if (!cfg.anchor) return;
  if (cfg.backend == "cpu") {
    r.bound_rows_per_s = probes.rate(r.access) / r.access.reads;
    r.bound_basis = "random-row probe, " + r.access.basis;
  } else {
    r.bound_rows_per_s = cuda_bound(r.access, rep, r.bound_basis);
  }
}

double load_average() {
  double l[1];
  return getloadavg(l, 1) == 1 ? l[0] : -1;  // -1: unknown (BenchReport)
}

}  // namespace

BenchReport run_bench(const BenchConfig& cfg) {
  check_config(cfg);
  const auto specs = StrategySpec::parse_list(cfg.strategies);
  for (const auto& spec : specs) check_spec(spec, cfg.rows, cfg.dim);  // before minutes of work
  auto backend = make_backend(cfg.backend);  // "no CUDA device: ..." before any work
  const Say say = [&](const std::string& s) {
    if (cfg.progress) cfg.progress(s);
  };
  BenchReport rep;
  rep.config = cfg;
  rep.load_before = load_average();
  rep.cpus = static_cast<int>(cpu::allowed_cpus().size());
  if (cfg.threads > 0) set_num_threads(cfg.threads);
  rep.threads = num_threads();
  if (cfg.pin) cpu::pin_threads();
  rep.isa = backend->description();

  const double work = static_cast<double>(cfg.rows) * cfg.dim * 4;
  std::vector<double> triad_passes;
  rep.anchor_name = cfg.backend == "cpu" ? "triad" : "d2d_copy";
  std::unique_ptr<bench::Triad> triad = cfg.anchor ? measure_anchors(cfg, work, rep, triad_passes, say) : nullptr;

  say("weights " + std::to_string(cfg.rows) + " x " + std::to_string(cfg.dim) + " fp32 (" +
      model::format_bytes(static_cast<uint64_t>(work)) + "), index sets");
  HostBuffer wbuf(cfg.rows * cfg.dim * 4, false);
  float* w = wbuf.as<float>();
  random_weights(w, cfg.rows, cfg.dim, cfg.seed, 1.0f / std::sqrt(static_cast<float>(cfg.dim)));
  // One generator (core/stats' ZipfGenerator) draws every set: the hot rows are the same in all.
  const Workload work_sets =
      Workload::fixed_bags(zipf_batches(cfg.rows, cfg.zipf, cfg.seed + 1, static_cast<std::uint64_t>(cfg.sets), cfg.batch), cfg.pooling);
  std::vector<std::uint64_t> counts(cfg.rows, 0);
  for (const auto& b : work_sets.batches)
    for (auto i : b) ++counts[static_cast<std::uint64_t>(i)];
  Probes probes(wbuf.data(), wbuf.size(), rep.threads);

  GroupMeasurer measurer(cfg, *backend, work_sets, probes, triad.get(), triad_passes, say);
  for (const auto& spec : specs) {
    say("strategy " + spec.to_string() + ": encode");
    measurer.add(encode_strategy(spec, w, counts, cfg));
  }
  std::vector<BenchResult> done = measurer.finish();
  if (!triad_passes.empty()) rep.anchor_gbs = median(triad_passes);
  rep.probes = probes.report();
  for (BenchResult& r : done) {
    fill_bounds(r, cfg, rep, probes);
    rep.results.push_back(std::move(r));
  }
  rep.load_after = load_average();
  return rep;
}

}  // namespace edo::kernels
