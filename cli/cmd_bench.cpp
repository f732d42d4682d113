// `edo bench`: benchmark every memory-saving strategy on this machine's CPU or GPU, beside
// the machine's own anchor (STREAM triad / device-to-device copy) measured in the same run.
#include <cstdio>
#include <iostream>
#include <new>
#include <optional>
#include <string>

#include "command.h"
#include "edo/kernels/bench.h"
#include "edo/kernels/cuda.h"
#include "edo/kernels/storage_probe.h"
#include "edo/tuner/device_profile.h"
#include "edo/text/size.h"

namespace {

// `edo bench --storage DIR`: the drive's figures, printed (or --json), and with --save-device
// added to a stored device profile.
template <class Options>
int run_storage(const Options& o) {
  edo::kernels::StorageProbeConfig c;
  c.dir = o.storage;
  try {
    c.file_bytes = edo::parse_size(o.storage_bytes);
  } catch (const std::invalid_argument& e) {
    throw edo::cli::UsageError(std::string("--storage-bytes: ") + e.what());
  }
  if (c.file_bytes < (std::uint64_t{1} << 20)) throw edo::cli::UsageError("--storage-bytes must be at least 1MiB");
  c.row_bytes = o.dim * 4;
  c.seconds_per_test = o.storage_seconds;
  c.seed = o.seed;
  if (!o.quiet) c.progress = [](const std::string& m) { std::fprintf(stderr, "edo bench: %s\n", m.c_str()); };
  // The profile is found before the minutes of measuring, so that a wrong name fails at once.
  std::optional<edo::tuner::DeviceProfile> device;
  if (!o.save_device.empty()) {
    device = edo::tuner::find_stored_device(o.save_device);
    if (!device)
      throw edo::cli::UsageError("--save-device '" + o.save_device + "': no stored device profile of that name (" +
                                 edo::tuner::stored_device_names() +
                                 "); measure the GPU first: edo bench --backend cuda --save-device NAME");
  }
  edo::kernels::StorageFigures f;
  try {
    f = edo::kernels::probe_storage(c);
  } catch (const std::runtime_error& e) {
    throw edo::cli::Failure(e.what());
  }
  if (o.json) std::cout << nlohmann::json{{"schema", "edo.storage/1"}, {"storage", edo::kernels::storage_to_json(f)}}.dump(2) << "\n";
  else std::cout << edo::kernels::storage_to_text(f);
  if (device) {
    device->storage = edo::kernels::storage_to_json(f);
    try {
      const std::string path = edo::tuner::save_device(*device);
      std::fprintf(stderr, "edo bench: added the storage under %s to device profile '%s' in %s\n", f.dir.c_str(),
                   device->name.c_str(), path.c_str());
    } catch (const std::exception& e) {
      throw edo::cli::Failure(std::string("--save-device: ") + e.what());
    }
  }
  return 0;
}

// The options of `edo bench`, with their defaults.
struct BenchOptions {
  std::string backend = "cpu";
  std::uint64_t rows = 1'000'000;
  std::uint32_t dim = 128;
  std::uint64_t batch = 65536;
  std::uint32_t pooling = 32;
  double zipf = 1.05;
  bool uniform = false;
  std::string strategies = "all";
  int threads = 0;
  int reps = 7;
  int sets = 8;
  std::uint64_t seed = 42;
  bool json = false;
  bool quiet = false;
  bool no_pin = false;
  std::string save_device;
  std::string storage;
  std::string storage_bytes = "1GiB";
  double storage_seconds = 2.0;
};

// Registers the options and the help text (the defaults shown are BenchOptions').
void add_bench_options(CLI::App& sub, const std::shared_ptr<BenchOptions>& o) {
  sub.footer(
      "Benchmark memory-saving strategies (fp16, bf16, fp8, int8/int4 row-wise, PQ, multi-hash, QR, low-rank,\n"
      "pruning, offload with a hot-row cache) on synthetic weights: device bytes, bytes per row, error,\n"
      "gather and bag rows/s, and each strategy's bound measured in the same run, with the ratio:\n"
      "  cpu:  a random-row read probe on the same index sets (rows of the strategy's size, as many\n"
      "        reads in flight as the cores allow); STREAM triad and memory latency as context\n"
      "  cuda: bytes moved (32-byte sectors) / device-to-device copy; offload misses / host-to-device copy\n"
      "Memory: the fp32 weights (rows x dim x 4 B), the encoded tables, and anchors sized to the table\n"
      "(latency buffer up to 1 GiB, triad arrays up to 3 x 256 MiB; a 1000 x 8 run stays near 50 MB).\n"
      "Storage (--storage DIR, instead of the strategies): the drive under DIR as an SSD-backed table would\n"
      "use it: a probe file (--storage-bytes, removed afterwards) written sequentially, then read with O_DIRECT\n"
      "(no page cache): random 4 KiB and row-sized reads (--dim x 4 bytes, rounded up to whole blocks) at\n"
      "queue depth 1 and 32, and sequential reads. With --save-device NAME the figures are added to the stored\n"
      "device profile NAME, beside its host link (measure the GPU first: edo bench --backend cuda --save-device NAME).\n"
      "  edo bench --storage /mnt/nvme --save-device \"NVIDIA H200\"\n"
      "Exit status: 0 ok, 1 runtime failure (e.g. no CUDA device), 2 bad flags.");
  sub.add_option("--backend", o->backend, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  sub.add_option("--rows", o->rows, "table rows")->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 36))->capture_default_str();
  sub.add_option("--dim", o->dim, "embedding dimension")->check(CLI::Range(1u, 65536u))->capture_default_str();
  sub.add_option("--batch", o->batch, "indices per batch (a gather reads this many rows; a bag batch is batch/pooling bags)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32))->capture_default_str();
  sub.add_option("--pooling", o->pooling, "indices per bag")->check(CLI::Range(1u, 1u << 24))->capture_default_str();
  auto* zipf = sub.add_option("--zipf", o->zipf, "Zipf exponent A of the row access distribution (ranks mapped through a seeded permutation)")
                   ->check(CLI::PositiveNumber)->capture_default_str();
  sub.add_flag("--uniform", o->uniform, "uniform random rows instead of Zipf")->excludes(zipf);
  sub.add_option("--strategies", o->strategies,
                 "comma-separated strategies, each name[:key=value...], e.g. fp32,int8,pq:m=16,offload:cache=0.05:policy=lru; "
                 "'all' = " + edo::kernels::default_strategy_list())
      ->capture_default_str();
  sub.add_option("--threads", o->threads, "CPU threads (0: all the CPUs this process may use)")->check(CLI::Range(0, 4096))->capture_default_str();
  sub.add_option("--reps", o->reps, "timed passes; the median is reported")->check(CLI::Range(1, 1000))->capture_default_str();
  sub.add_option("--sets", o->sets, "rotating index sets per pass")->check(CLI::Range(1, 1000))->capture_default_str();
  sub.add_option("--seed", o->seed, "seed of weights, indices and k-means")->capture_default_str();
  sub.add_flag("--json", o->json, "print edo.bench/1 JSON on stdout");
  sub.add_flag("--no-pin", o->no_pin, "do not pin the CPU threads to distinct CPUs");
  sub.add_flag("-q,--quiet", o->quiet, "no progress on stderr");
  sub.add_option("--save-device", o->save_device,
                 "store this run's figures (fp32 gather, copy, host link) as the device profile NAME that 'edo tune "
                 "--target-device NAME' models (in $EDO_DEVICE_DIR, else ~/.config/edo/devices); name it as recordings "
                 "name the GPU, e.g. \"NVIDIA H200\"")
      ->type_name("NAME");
  sub.add_option("--storage", o->storage, "measure the drive under this directory (O_DIRECT reads) instead of the strategies")
      ->type_name("DIR");
  sub.add_option("--storage-bytes", o->storage_bytes, "size of the storage probe file (larger than the drive's cache is better)")
      ->type_name("SIZE")
      ->capture_default_str();
  sub.add_option("--storage-seconds", o->storage_seconds, "seconds each random-read test of --storage runs")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
}

// The strategy benchmark: checks, the run, its text or JSON, and --save-device.
int run_strategy_bench(const BenchOptions& o) {
  if (o.pooling > o.batch) throw edo::cli::UsageError("--pooling must not exceed --batch");
  if (!o.save_device.empty() && o.strategies != "all" && o.strategies.find("fp32") == std::string::npos)
    throw edo::cli::UsageError("--save-device needs the fp32 strategy (its gather calibrates the model): add fp32 to --strategies");
  try {
    (void)edo::kernels::StrategySpec::parse_list(o.strategies);
  } catch (const std::invalid_argument& e) {
    throw edo::cli::UsageError(std::string("--strategies: ") + e.what());
  }
  if (o.backend == "cuda") {
    const std::string st = edo::kernels::cuda::device_status();
    if (!st.empty()) throw edo::cli::Failure(st + "; run with --backend cpu instead");
  }
  edo::kernels::BenchConfig c;
  c.backend = o.backend;
  c.rows = o.rows;
  c.dim = o.dim;
  c.batch = o.batch;
  c.pooling = o.pooling;
  c.zipf = o.uniform ? 0.0 : o.zipf;
  c.strategies = o.strategies;
  c.threads = o.threads;
  c.reps = o.reps;
  c.sets = o.sets;
  c.seed = o.seed;
  c.pin = !o.no_pin;
  if (!o.quiet) c.progress = [](const std::string& m) { std::fprintf(stderr, "edo bench: %s\n", m.c_str()); };
  edo::kernels::BenchReport rep;
  try {
    rep = edo::kernels::run_bench(c);
  } catch (const std::invalid_argument& e) {
    throw edo::cli::UsageError(e.what());
  } catch (const std::bad_alloc&) {
    // the fp32 source weights alone are rows x dim x 4 bytes, each encoded table comes on top
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "not enough memory for a %llu x %u benchmark (the fp32 weights alone are %.1f GiB); lower --rows or --dim",
                  static_cast<unsigned long long>(c.rows), c.dim, static_cast<double>(c.rows) * c.dim * 4 / (1ull << 30));
    throw edo::cli::Failure(msg);
  }
  if (o.json) std::cout << edo::kernels::to_json(rep).dump(2) << "\n";
  else std::cout << edo::kernels::to_text(rep);
  if (!o.save_device.empty()) {
    // The profile is made of the report's own JSON (the same reading as --target-device FILE).
    try {
      const auto device = edo::tuner::device_from_json(edo::kernels::to_json(rep), "this edo bench run", o.save_device);
      const std::string path = edo::tuner::save_device(device);
      std::fprintf(stderr, "edo bench: saved device profile '%s' in %s ('edo tune --target-device \"%s\"' models it)\n",
                   device.name.c_str(), path.c_str(), device.name.c_str());
    } catch (const std::exception& e) {
      throw edo::cli::Failure(std::string("--save-device: ") + e.what());
    }
  }
  return 0;
}

edo::cli::Runner setup_bench(CLI::App& sub) {
  auto o = std::make_shared<BenchOptions>();
  add_bench_options(sub, o);
  return [o]() -> int { return !o->storage.empty() ? run_storage(*o) : run_strategy_bench(*o); };
}

}  // namespace

EDO_REGISTER_COMMAND("bench", "benchmark memory-saving strategies on this CPU or GPU, beside the machine's bandwidth anchor",
                     60, setup_bench);
