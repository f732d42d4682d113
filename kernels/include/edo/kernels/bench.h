// The strategy benchmark behind `edo bench` and bench/kernels: encode synthetic weights with
// each strategy, measure gather and bag throughput on the CPU or CUDA backend (warm-up,
// median of repeats, rotating index sets), and the machine's anchor in the same run
// (STREAM triad on the CPU, interleaved with the strategies' passes; device-to-device copy
// on CUDA).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "edo/kernels/strategy.h"

namespace edo::kernels {

struct BenchConfig {
  std::string backend = "cpu";        // cpu | cuda
  std::uint64_t rows = 1'000'000;
  std::uint32_t dim = 128;
  std::uint64_t batch = 65536;        // indices per batch (gather: rows; bag: batch/pooling bags)
  std::uint32_t pooling = 32;         // indices per bag
  double zipf = 1.05;                 // <= 0: uniform
  std::string strategies = default_strategy_list();
  int threads = 0;                    // 0: all the CPUs OpenMP sees
  int sets = 8;                       // rotating index sets
  int reps = 7;                       // timed passes (median)
  int warmup = 1;
  std::uint64_t seed = 42;
  bool anchor = true;
  bool pin = true;                    // pin CPU threads
  std::uint64_t group_bytes = 0;      // CPU: tables measured together up to this many bytes
                                      // (0: a third of MemAvailable)
  std::function<void(const std::string&)> progress;  // one line per step (stderr in the CLI)
};

struct BenchResult {
  std::string strategy;  // the spec as given, e.g. "offload:policy=lru"
  std::string name;
  nlohmann::json params;
  std::uint64_t device_bytes = 0, host_bytes = 0;
  double bytes_per_row = 0;  // table bytes one looked-up row reads
  double error = 0;
  bool needs_retraining = false;
  double gather_rows_per_s = 0, bag_rows_per_s = 0;
  double gather_gbs = 0, bag_gbs = 0;  // row bytes read per second
  double hit_rate = -1;
  double encode_s = 0;
};

struct BenchReport {
  BenchConfig config;
  int threads = 0;
  std::string isa;  // CPU kernels used, or the GPU's description
  std::string anchor_name;
  double anchor_gbs = 0;
  double latency_ns = 0;  // CPU: one dependent random load from a 1 GiB buffer (0: not measured)
  double load_before = -1, load_after = -1;  // 1-minute load average around the run
  int cpus = 0;                              // CPUs this process may use
  std::vector<BenchResult> results;
};

// STREAM triad a = b + s*c over three arrays of `bytes_per_array`, `threads` pinned threads;
// GB/s counts 3 * bytes_per_array per pass (no write-allocate traffic), median of `reps`.
double triad_gbs(int threads, std::uint64_t bytes_per_array = 256ull << 20, int reps = 7);

// Memory latency: ns per dependent load walking a random cycle over every cache line of a
// `bytes` huge-page buffer, `steps` loads. Random row reads are bound by it: at L ns, reading
// G GB/s of rows needs G * L bytes of loads in flight (Little's law).
double memory_latency_ns(std::uint64_t bytes, std::uint64_t steps);

BenchReport run_bench(const BenchConfig& config);  // throws std::invalid_argument / runtime_error
nlohmann::json to_json(const BenchReport& report);  // schema edo.bench/1
std::string to_text(const BenchReport& report);

}  // namespace edo::kernels
