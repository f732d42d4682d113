// The strategy benchmark behind `edo bench` and bench/kernels (edo_kernels_bench): encode
// synthetic weights with each strategy, measure gather and bag throughput on the CPU or CUDA
// backend (warm-up, median of repeats, rotating index sets), and give every strategy a bound
// measured or derived in the same run, with the ratio:
//
//   cpu   the random-row read probe: the same index sets, rows of the strategy's size read
//         with prefetches as many rows ahead as the kernels use (as many misses in flight as
//         the cores allow), interleaved pass by pass with the strategies' own passes. The
//         STREAM triad and the memory latency are printed beside it as context.
//   cuda  bytes moved / the device-to-device copy bandwidth measured in the same run, with
//         32-byte sectors counted (a row touches whole sectors); on-chip bytes (PQ codebook)
//         against the shared-memory bandwidth; offload's misses against the pinned
//         host-to-device copy bandwidth, also measured in the run.
//
// Every anchor is sized to the work (a 1000 x 8 table does not get a 1 GiB latency buffer).
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
  bool anchor = true;                 // measure the anchors and bounds
  bool pin = true;                    // pin CPU threads
  std::uint64_t group_bytes = 0;      // CPU: tables measured together up to this many bytes
                                      // (0: a third of MemAvailable)
  std::function<void(const std::string&)> progress;  // one line per step (stderr in the CLI)
};

// What one looked-up row of a strategy costs in memory traffic, for the bounds.
struct AccessModel {
  double reads = 1;               // random reads of the main array per looked-up row (multi-hash: k)
  double read_bytes = 0;          // bytes one such read uses
  double stride = 0;              // bytes between the starts of consecutive entries of that array
  std::uint64_t entries = 0;      // entries of that array
  double index_bytes = 0;         // a 4-byte remap/slot entry read per row (pruned, offload)
  double onchip_bytes = 0;        // bytes per row read from arrays that stay on chip (PQ codebook)
  double host_fraction = 0;       // offload: share of rows read from host memory (1 - hit rate)
  std::string basis;              // e.g. "1 x 136 B of a 144 B row"
};
AccessModel access_model(const EncodedTable& table);

// Mean bytes of the 32-byte sectors a read of `bytes` bytes touches, reads starting at
// multiples of `stride` from a 32-byte aligned base (a 144 B int8 row: 160 B).
double sector_bytes(double bytes, double stride);

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
  double miss_gbs = 0;  // offload: bytes of missed rows read from host memory per second (bag)
  double encode_s = 0;
  AccessModel access;
  double bound_rows_per_s = 0;  // 0: not measured
  std::string bound_basis;      // how the bound was obtained, one line
};

struct BenchReport {
  BenchConfig config;
  int threads = 0;
  std::string isa;  // CPU kernels used, or the GPU's description
  // CPU: triad GB/s (context) and the memory latency; CUDA: d2d and h2d copy GB/s and the
  // shared-memory bandwidth (from the device's attributes).
  std::string anchor_name;
  double anchor_gbs = 0;
  double latency_ns = 0;  // CPU: one dependent random load (0: not measured)
  double h2d_gbs = 0, onchip_gbs = 0;
  std::uint64_t anchor_bytes = 0;            // memory the anchors used
  double load_before = -1, load_after = -1;  // 1-minute load average around the run
  int cpus = 0;                              // CPUs this process may use
  // CPU: the random-row probe per read size (bytes, stride) -> rows/s (median of passes)
  struct Probe {
    double read_bytes, stride, rows_per_s;
  };
  std::vector<Probe> probes;
  std::vector<BenchResult> results;
};

// STREAM triad a = b + s*c over three arrays of `bytes_per_array`, `threads` pinned threads;
// GB/s counts 3 * bytes_per_array per pass (no write-allocate traffic), median of `reps`.
double triad_gbs(int threads, std::uint64_t bytes_per_array = 256ull << 20, int reps = 7);

// Memory latency: ns per dependent load walking a random cycle over every cache line of a
// `bytes` huge-page buffer, `steps` loads. Random row reads are bound by it: at L ns, reading
// G GB/s of rows needs G * L bytes of loads in flight (Little's law).
double memory_latency_ns(std::uint64_t bytes, std::uint64_t steps);

// The random-row read probe: rows/s reading `read_bytes` at `entry % entries` * stride of
// `base` for every id of the batches, `threads` threads, prefetching `distance` rows ahead.
double row_probe_rows_per_s(const std::uint8_t* base, std::uint64_t entries, double read_bytes, double stride,
                            const std::vector<std::vector<std::int64_t>>& batches, int threads, int distance);

BenchReport run_bench(const BenchConfig& config);  // throws std::invalid_argument / runtime_error
nlohmann::json to_json(const BenchReport& report);  // schema edo.bench/1 (fields added, none changed)
std::string to_text(const BenchReport& report);

}  // namespace edo::kernels
