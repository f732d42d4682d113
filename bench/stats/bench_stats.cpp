// Statistics-engine benchmark. One run prints each project figure beside its anchor measured
// in the same run, and the ratio:
//   exact counting (TableIngestor, counts only)   vs  a plain counts[row]++ loop
//   SHARDS LRU curve (TableIngestor, full ingest)  vs  exact Mattson stack (every reference)
//   SHARDS mean absolute error vs exact on that same trace (10 M Zipf(1.05) refs, 1 M rows)
//   exact prefix of a large table (Mattson stack, rows as ids) vs SHARDS, same trace, also as
//   ns per index beside the tracer's budget (issue 32: <= 20 ns per index, every statistic)
//   bench_trace_overhead's tracer stream (hashed counts and their deltas; every statistic)
//   vs a plain counts[row]++ of the same batches, as ns per index beside that budget
//   the tracer streams of the two PyTorch benches, every statistic, ns per index (diagnostic:
//   bench/torch_overhead's DLRM-like tables and its repeated 768-id call)
// Usage: bench_stats [--benchmark_* flags] [--smoke]   (--smoke: 1 M refs, for ctest)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "edo/stats/table_stats.h"

namespace {

using namespace edo::stats;

constexpr uint64_t kRows = 1u << 20;  // ~1 M rows, as in the anchor file
size_t g_refs = 10'000'000;

const std::vector<int64_t>& trace() {
  static std::vector<int64_t> t = [] {
    std::vector<int64_t> v(g_refs);
    ZipfGenerator(kRows, 1.05, 7).fill(v.data(), v.size());
    return v;
  }();
  return t;
}

std::map<std::string, double> g_rate;  // M indices/s per benchmark (last run)

void record(benchmark::State& state, const char* name) {
  const double items = static_cast<double>(state.iterations()) * static_cast<double>(trace().size());
  state.SetItemsProcessed(static_cast<int64_t>(items));
  state.counters["M_idx_per_s"] = benchmark::Counter(items / 1e6, benchmark::Counter::kIsRate);
  (void)name;
}

// Anchor: the plainest possible exact count.
void BM_PlainLoop(benchmark::State& state) {
  const auto& t = trace();
  std::vector<uint32_t> counts(kRows, 0);
  for (auto _ : state) {
    for (int64_t r : t) counts[static_cast<size_t>(r)]++;
    benchmark::DoNotOptimize(counts.data());
    benchmark::ClobberMemory();
  }
  record(state, "plain");
}

// Project: the ingestor's counting path (range check, 64-bit overflow, dirty blocks).
void BM_ExactCount(benchmark::State& state) {
  const auto& t = trace();
  StatsConfig cfg;
  cfg.track_lru = false;
  TableIngestor ing(kRows, cfg);
  for (auto _ : state) {
    ing.add(t.data(), t.size());
    benchmark::ClobberMemory();
  }
  record(state, "exact");
}

// take_delta() + serialize() after one trace's worth of counts (what the tracer does about
// once a second); reported as time per call and delta bytes.
void BM_TakeDelta(benchmark::State& state) {
  const auto& t = trace();
  StatsConfig cfg;
  cfg.track_lru = false;
  TableIngestor ing(kRows, cfg);
  size_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ing.add(t.data(), t.size());
    state.ResumeTiming();
    bytes = ing.take_delta().serialize().size();
  }
  state.counters["delta_MiB"] = static_cast<double>(bytes) / (1 << 20);
}

// Anchor: exact Mattson stack distances (every reference through the exact stack),
// i.e. the ingestor with the exact-LRU limit raised to the table size.
void BM_MattsonExact(benchmark::State& state) {
  const auto& t = trace();
  StatsConfig cfg;
  cfg.exact_lru_rows_limit = kRows;
  TableIngestor ing(kRows, cfg);
  for (auto _ : state) {
    ing.add(t.data(), t.size());
    benchmark::ClobberMemory();
  }
  record(state, "mattson");
}

// The sampled path from the first reference: by default a stream's first
// exact_lru_distinct_limit distinct rows get exact distances, which on this 2^20-row trace
// would be all of them (BM_MattsonExact times that).
StatsConfig sampled_cfg() {
  StatsConfig c;
  c.exact_lru_distinct_limit = 0;
  return c;
}

// Project: full ingest with the default SHARDS sampling (exact counts + LRU curve); the
// ingestor keeps running across iterations as in a job (take_delta is timed separately).
void BM_ShardsIngest(benchmark::State& state) {
  const auto& t = trace();
  TableIngestor ing(kRows, sampled_cfg());
  for (auto _ : state) {
    ing.add(t.data(), t.size());
    benchmark::ClobberMemory();
  }
  record(state, "shards");
}

// Anchor of the ordered sample's cost (issue 19, docs/stats.md "Ordered sample"): the same
// ingest without it (ordered_sample_refs 0), as before the tuner replayed caches.
void BM_UnorderedShardsIngest(benchmark::State& state) {
  const auto& t = trace();
  StatsConfig c = sampled_cfg();
  c.ordered_sample_refs = 0;
  TableIngestor ing(kRows, c);
  for (auto _ : state) {
    ing.add(t.data(), t.size());
    benchmark::ClobberMemory();
  }
  record(state, "shards without the ordered sample");
}

// Project: the exact prefix of a large table's curve (issue 18 §4): the same trace on a table of
// 2^22 rows (above exact_lru_rows_limit; at most 16x exact_lru_distinct_limit, so the rows
// themselves are the stack's ids, no row map); the trace's first 2^22 references (the
// hand-over bound), a fresh ingestor each time: exact counts, the exact curve and the ordered
// sample, every statistic the tracer keeps. Anchor: SHARDS.
void BM_ExactPrefixIngest(benchmark::State& state) {
  const auto& t = trace();
  const size_t n = std::min<size_t>(t.size(), size_t{1} << 22);  // the exact prefix's bound
  for (auto _ : state) {
    state.PauseTiming();
    auto ing = std::make_unique<TableIngestor>(kRows * 4, StatsConfig{});
    state.ResumeTiming();
    ing->add(t.data(), n);
    benchmark::ClobberMemory();
    state.PauseTiming();
    ing.reset();
    state.ResumeTiming();
  }
  const double items = static_cast<double>(state.iterations()) * static_cast<double>(n);
  state.SetItemsProcessed(static_cast<int64_t>(items));
  state.counters["M_idx_per_s"] = benchmark::Counter(items / 1e6, benchmark::Counter::kIsRate);
}

// Informational: sketch mode (a table above exact_rows_limit: count-min + space-saving +
// HyperLogLog + SHARDS), same trace spread over 2^28 rows.
void BM_SketchIngest(benchmark::State& state) {
  static std::vector<int64_t> t = [] {
    std::vector<int64_t> v(trace().size());
    ZipfGenerator(uint64_t{1} << 28, 1.05, 7).fill(v.data(), v.size());
    return v;
  }();
  TableIngestor ing(uint64_t{1} << 28, sampled_cfg());
  for (auto _ : state) {
    ing.add(t.data(), t.size());
    benchmark::ClobberMemory();
  }
  record(state, "sketch");
}

// The tracer thread's stream on bench_trace_overhead (issue 32): 43 batches of 65,536 indices
// cycling over 8 Zipf(1.05) sets on a 10^6-row table (~110,000 rows read, a ninth of the
// table: its exact counts stay hashed, issue 31), a delta taken and serialized every 16 batches
// and at the end, a fresh table each iteration.
constexpr uint64_t kTracerRows = 1'000'000;
constexpr int kTracerBatches = 43;
const std::vector<std::vector<int64_t>>& tracer_sets() {
  static const std::vector<std::vector<int64_t>> sets = [] {
    ZipfGenerator gen(kTracerRows, 1.05, 42);
    std::vector<std::vector<int64_t>> v(8, std::vector<int64_t>(65'536));
    for (auto& s : v) gen.fill(s.data(), s.size());
    return v;
  }();
  return sets;
}

void tracer_stream(benchmark::State& state, const StatsConfig& cfg) {
  const auto& sets = tracer_sets();
  for (auto _ : state) {
    TableIngestor ing(kTracerRows, cfg);
    for (int b = 0; b < kTracerBatches; ++b) {
      const auto& s = sets[size_t(b) % sets.size()];
      ing.add(s.data(), s.size());
      if (b % 16 == 15) benchmark::DoNotOptimize(ing.take_delta().serialize());
    }
    benchmark::DoNotOptimize(ing.take_delta().serialize());
  }
  const double items = static_cast<double>(state.iterations()) * kTracerBatches * 65'536.0;
  state.SetItemsProcessed(static_cast<int64_t>(items));
  state.counters["M_idx_per_s"] = benchmark::Counter(items / 1e6, benchmark::Counter::kIsRate);
}

// Anchor: the same batches into a plain counts[row]++ array (no deltas).
void BM_TracerPlainCounts(benchmark::State& state) {
  const auto& sets = tracer_sets();
  std::vector<uint32_t> counts(kTracerRows, 0);
  for (auto _ : state) {
    for (int b = 0; b < kTracerBatches; ++b)
      for (int64_t r : sets[size_t(b) % sets.size()]) counts[static_cast<size_t>(r)]++;
    benchmark::DoNotOptimize(counts.data());
    benchmark::ClobberMemory();
  }
  const double items = static_cast<double>(state.iterations()) * kTracerBatches * 65'536.0;
  state.counters["M_idx_per_s"] = benchmark::Counter(items / 1e6, benchmark::Counter::kIsRate);
}

// Project: the tracer's counts alone (EDO_LRU=0), hashed, with their deltas.
void BM_TracerCountsOnly(benchmark::State& state) {
  StatsConfig cfg;
  cfg.track_lru = false;
  tracer_stream(state, cfg);
}

// Project: every statistic (the exact LRU prefix of every reference, the ordered sample).
void BM_TracerEveryStatistic(benchmark::State& state) { tracer_stream(state, StatsConfig{}); }

// Project: every statistic with the sampled curve from the first reference (SHARDS's steady
// state, what a table costs after its exact prefix of 2^22 references).
void BM_TracerSampled(benchmark::State& state) { tracer_stream(state, sampled_cfg()); }

// The tracer's streams of the two PyTorch benches (issue 32), every statistic, ns per index:
//  * DLRM-like (bench/torch_overhead/bench.py: examples/dlrm_like.py's six tables, 300 to 50,000
//    rows, all below exact_lru_rows_limit, so exact stacks for the whole run): ~61,000 indices
//    a step over 46 steps; a delta taken and a drift window closed every 40 steps (the 1 s
//    flush at ~25 ms a step) and at the end.
//  * one repeated call (bench/torch_overhead/percall.py): the same 768 uniform ids into a
//    100,000-row table, 6,000 calls (past the table's 2^22-reference exact prefix).
struct SmallTable {
  uint64_t rows;
  double alpha;
  size_t per_step;
};
constexpr SmallTable kDlrmTables[] = {{20000, 1.05, 2048 * 6}, {50000, 1.2, 2048 * 8}, {1000, 0.9, 2048 * 6},
                                      {5000, 1.3, 2048 * 6},  {10000, 1.1, 2048},    {300, 0.8, 2048 * 2}};
constexpr int kDlrmSteps = 46;

void BM_TracerDlrmTables(benchmark::State& state) {
  static const std::vector<std::vector<std::vector<int64_t>>> steps = [] {
    std::vector<std::vector<std::vector<int64_t>>> v;
    uint64_t seed = 11;
    for (const auto& t : kDlrmTables) {
      ZipfGenerator gen(t.rows, t.alpha, seed++);
      std::vector<std::vector<int64_t>> per(kDlrmSteps, std::vector<int64_t>(t.per_step));
      for (auto& s : per) gen.fill(s.data(), s.size());
      v.push_back(std::move(per));
    }
    return v;
  }();
  double n = 0;
  for (auto _ : state) {
    std::vector<std::unique_ptr<TableIngestor>> ing;
    for (const auto& t : kDlrmTables) ing.push_back(std::make_unique<TableIngestor>(t.rows, StatsConfig{}));
    for (int s = 0; s < kDlrmSteps; ++s) {
      for (size_t k = 0; k < ing.size(); ++k) ing[k]->add(steps[k][size_t(s)].data(), steps[k][size_t(s)].size());
      if (s % 40 == 39 || s + 1 == kDlrmSteps)
        for (auto& i : ing) {
          i->close_window();
          benchmark::DoNotOptimize(i->take_delta().serialize());
        }
    }
  }
  for (const auto& t : kDlrmTables) n += static_cast<double>(t.per_step) * kDlrmSteps;
  const double items = static_cast<double>(state.iterations()) * n;
  state.SetItemsProcessed(static_cast<int64_t>(items));
  state.counters["ns_per_idx"] = benchmark::Counter(items * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_TracerRepeatedCall(benchmark::State& state) {
  static const std::vector<int64_t> ids = [] {
    std::vector<int64_t> v(768);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (auto& r : v) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      r = static_cast<int64_t>(x % 100000);
    }
    return v;
  }();
  constexpr int kCalls = 6000;
  for (auto _ : state) {
    TableIngestor ing(100000, StatsConfig{});
    for (int c = 0; c < kCalls; ++c) {
      ing.add(ids.data(), ids.size());
      if (c % 1000 == 999) benchmark::DoNotOptimize(ing.take_delta().serialize());
    }
  }
  const double items = static_cast<double>(state.iterations()) * kCalls * 768.0;
  state.SetItemsProcessed(static_cast<int64_t>(items));
  state.counters["ns_per_idx"] = benchmark::Counter(items * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_PlainLoop)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExactCount)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TakeDelta)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MattsonExact)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_ShardsIngest)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_UnorderedShardsIngest)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExactPrefixIngest)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_SketchIngest)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_TracerPlainCounts)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TracerCountsOnly)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TracerEveryStatistic)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TracerSampled)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TracerDlrmTables)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TracerRepeatedCall)->Unit(benchmark::kMillisecond);

// Collects M idx/s from the runs for the summary.
class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      auto it = r.counters.find("M_idx_per_s");
      if (it != r.counters.end() && r.run_type == Run::RT_Iteration) g_rate[r.benchmark_name()] = it->second.value;
    }
  }
};

double rate_of(const char* prefix) {
  for (const auto& [k, v] : g_rate)
    if (k.rfind(prefix, 0) == 0) return v;
  return 0.0;
}

// MAE of the default SHARDS curve against the exact curve on the benchmark trace, at the
// summary's log-spaced points.
double shards_mae(double* max_err) {
  const auto& t = trace();
  StatsConfig ecfg;
  ecfg.exact_lru_rows_limit = kRows;
  TableIngestor e(kRows, ecfg), s(kRows, sampled_cfg());
  e.add(t.data(), t.size());
  s.add(t.data(), t.size());
  const TableSummary se = summarize(e.take_delta()), ss = summarize(s.take_delta());
  double sum = 0.0;
  *max_err = 0.0;
  for (size_t i = 0; i < se.lru_curve.size(); ++i) {
    const double d = std::fabs(se.lru_curve[i].y - ss.lru_curve[i].y);
    sum += d;
    *max_err = std::max(*max_err, d);
  }
  return se.lru_curve.empty() ? 0.0 : sum / static_cast<double>(se.lru_curve.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0)
      g_refs = 1'000'000;
    else
      args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  std::printf("trace: %zu Zipf(1.05) refs over %llu rows\n", trace().size(), static_cast<unsigned long long>(kRows));
  Collector rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();

  const double plain = rate_of("BM_PlainLoop"), exact = rate_of("BM_ExactCount");
  const double matt = rate_of("BM_MattsonExact"), shards = rate_of("BM_ShardsIngest");
  std::printf("\n== edo stats: project vs anchor (same run, 1 core) ==\n");
  if (const double sk = rate_of("BM_SketchIngest"); sk > 0)
    std::printf("sketch_ingest (2^28 rows, no anchor): %.1f M idx/s\n", sk);
  if (plain > 0 && exact > 0)
    std::printf("exact_count: %.0f M idx/s  anchor counts[row]++: %.0f M idx/s  ratio %.2f  (target >= 1000 M idx/s: %s)\n",
                exact, plain, exact / plain, exact >= 1000 ? "met" : "NOT met");
  if (shards > 0 && matt > 0)
    std::printf("shards_curve: %.0f M idx/s  anchor exact Mattson: %.1f M idx/s  ratio %.1f  (target >= 100 M idx/s: %s)\n",
                shards, matt, shards / matt, shards >= 100 ? "met" : "NOT met");
  if (const double un = rate_of("BM_UnorderedShardsIngest"); un > 0 && shards > 0)
    std::printf("ordered_sample: SHARDS ingest with it %.0f M idx/s  anchor without it: %.0f M idx/s  ratio %.2f\n", shards,
                un, shards / un);
  if (const double ep = rate_of("BM_ExactPrefixIngest"); ep > 0 && shards > 0) {
    std::printf("exact_prefix_curve (2^22-row table, its first 2^22 refs): %.1f M idx/s  anchor SHARDS: "
                "%.0f M idx/s  ratio %.2f\n", ep, shards, ep / shards);
    std::printf("exact_prefix_ns_per_index: %.1f ns (every statistic; target <= 20 ns: %s)\n", 1e3 / ep,
                1e3 / ep <= 20 ? "met" : "NOT met");
  }
  if (const double plain_t = rate_of("BM_TracerPlainCounts"); plain_t > 0) {
    // bench_trace_overhead's tracer thread, without the job's traffic between batches
    // the 20 ns target is for every statistic; counts alone are a part of it
    if (const double r = rate_of("BM_TracerCountsOnly"); r > 0)
      std::printf("tracer_stream counts only (EDO_LRU=0): %.1f ns/index  anchor counts[row]++: %.1f ns/index  ratio %.2f\n",
                  1e3 / r, 1e3 / plain_t, plain_t / r);
    if (const double r = rate_of("BM_TracerEveryStatistic"); r > 0)
      std::printf("tracer_stream every statistic: %.1f ns/index  anchor counts[row]++: %.1f ns/index  ratio %.2f  "
                  "(target <= 20 ns: %s)\n", 1e3 / r, 1e3 / plain_t, plain_t / r, 1e3 / r <= 20 ? "met" : "NOT met");
    if (const double r = rate_of("BM_TracerSampled"); r > 0)
      std::printf("tracer_stream every statistic, sampled curve (after the exact prefix): %.1f ns/index  anchor "
                  "counts[row]++: %.1f ns/index  ratio %.2f  (target <= 20 ns: %s)\n", 1e3 / r, 1e3 / plain_t,
                  plain_t / r, 1e3 / r <= 20 ? "met" : "NOT met");
  }
  if ((shards > 0 || matt > 0) && !std::getenv("EDO_BENCH_NO_MAE")) {
    double max_err = 0.0;
    const double mae = shards_mae(&max_err);
    std::printf("shards_mae: %.4f vs exact on the same trace (max %.4f; target <= 0.01: %s)\n", mae, max_err,
                mae <= 0.01 ? "met" : "NOT met");
  }
  return 0;
}
