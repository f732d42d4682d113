// bench_kernels: the project's CPU kernel figures beside their anchors, from ONE run.
//
//   bench_kernels [--threads N] [--reps N] [--zipf] [--json FILE] [--shapes 10M,1M] [--backend cpu|cuda]
//                 [--strategies LIST] [--batch N]
//
// For each shape (default 10M x 128 and 1M x 128, uniform indices, 2 threads, batch 65536
// indices in bags of 32) it measures fp32, int8 and int4 bags (or --strategies) with each one's
// bound from the same run (bench.h), and prints the ratios against the targets:
//   cpu:  fp32 bag >= 0.8x its random-row probe; int8 / int4 bag rows/s >= 2x fp32
//   cuda: row formats >= 0.7x their sector bound, fp16 level with bf16, others >= 0.5x
// The PyTorch anchor (torch.nn.functional.embedding_bag) is compare_torch.py's job.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "edo/kernels/bench.h"
#include "edo/kernels/cuda.h"

using namespace edo::kernels;

int main(int argc, char** argv) {
  int threads = 2, reps = 7;
  std::uint64_t batch = 65536;
  double zipf = 0.0;
  std::string json_path, backend = "cpu", shapes = "10M,1M", strategies = "fp32,int8,int4";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_kernels: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads") threads = std::atoi(next().c_str());
    else if (a == "--reps") reps = std::atoi(next().c_str());
    else if (a == "--zipf") zipf = 1.05;
    else if (a == "--json") json_path = next();
    else if (a == "--shapes") shapes = next();
    else if (a == "--backend") backend = next();
    else if (a == "--strategies") strategies = next();
    else if (a == "--batch") batch = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--device-status") {  // gpu-steps.sh: is there a device to measure?
      const std::string st = cuda::device_status();
      std::printf("%s\n", st.empty() ? cuda::device_description().c_str() : st.c_str());
      return st.empty() ? 0 : 1;
    }
    else {
      std::fprintf(stderr, "usage: bench_kernels [--threads N] [--reps N] [--zipf] [--json FILE] [--shapes 10M,1M] [--backend cpu|cuda] [--strategies LIST] [--batch N] [--device-status]\n");
      return 2;
    }
  }
  nlohmann::json all = nlohmann::json::array();
  bool all_ok = true;
  std::string summary;
  std::size_t pos = 0;
  while (pos <= shapes.size()) {
    const std::size_t comma = shapes.find(',', pos);
    std::string s = shapes.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? shapes.size() + 1 : comma + 1;
    if (s.empty()) continue;
    double mult = 1;
    if (s.back() == 'M') mult = 1e6, s.pop_back();
    else if (s.back() == 'K') mult = 1e3, s.pop_back();
    BenchConfig c;
    c.backend = backend;
    c.rows = static_cast<std::uint64_t>(std::atof(s.c_str()) * mult);
    c.dim = 128;
    c.zipf = zipf;
    c.threads = threads;
    c.reps = reps;
    c.strategies = strategies;
    c.batch = batch;
    c.progress = [](const std::string& m) { std::fprintf(stderr, "  .. %s\n", m.c_str()); };
    std::fprintf(stderr, "shape %llu x %u\n", static_cast<unsigned long long>(c.rows), c.dim);
    BenchReport rep;
    try {
      rep = run_bench(c);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_kernels: %s\n", e.what());
      return 1;
    }
    std::printf("%s\n", to_text(rep).c_str());
    all.push_back(to_json(rep));
    const BenchResult* f32 = nullptr;
    const BenchResult* bf16 = nullptr;
    for (const auto& r : rep.results) {
      if (r.name == "fp32") f32 = &r;
      if (r.name == "bf16") bf16 = &r;
    }
    char line[512];
    std::snprintf(line, sizeof line, "== %s %llu x 128 %s, %d threads\n", backend.c_str(), static_cast<unsigned long long>(c.rows),
                  zipf > 0 ? "zipf 1.05" : "uniform", rep.threads);
    summary += line;
    const bool gpu = backend == "cuda";
    for (const auto& r : rep.results) {
      const double vb = r.bound_rows_per_s > 0 ? r.bag_rows_per_s / r.bound_rows_per_s : 0.0;
      const bool rowf = r.name == "fp32" || r.name == "fp16" || r.name == "bf16" || r.name == "fp8" || r.name == "int8" || r.name == "int4";
      // Targets (issue 10): CPU: fp32 >= 0.8x its probe, int8/int4 >= 2x fp32 rows/s. CUDA:
      // row formats >= 0.7x their bound (fp32 at ~0.95x today), fp16 level with bf16, every
      // other strategy >= 0.5x its bound.
      std::string verdict;
      auto judge = [&](bool ok, const char* what) {
        verdict += std::string("  (") + what + (ok ? ") MET" : ") MISSED");
        if (!ok) all_ok = false;
      };
      if (!gpu && r.name == "fp32") judge(vb >= 0.8, "target >= 0.80x probe");
      if (!gpu && f32 && (r.name == "int8" || r.name == "int4")) judge(r.bag_rows_per_s >= 2.0 * f32->bag_rows_per_s, "target >= 2x fp32 rows/s");
      if (gpu && rowf) judge(vb >= 0.7, "target >= 0.70x bound");
      if (gpu && !rowf) judge(vb >= 0.5, "target >= 0.50x bound");
      if (gpu && r.name == "fp16" && bf16) judge(r.bag_rows_per_s >= 0.95 * bf16->bag_rows_per_s, "level with bf16");
      std::snprintf(line, sizeof line, "   %-24s %9.1f M rows/s  bound %9.1f M rows/s  %.2fx%s%s\n", r.strategy.c_str(), r.bag_rows_per_s / 1e6,
                    r.bound_rows_per_s / 1e6, vb, f32 && &r != f32 ? (" | " + std::to_string(r.bag_rows_per_s / f32->bag_rows_per_s).substr(0, 4) + "x fp32").c_str() : "",
                    verdict.c_str());
      summary += line;
    }
  }
  std::printf("%s", summary.c_str());
  if (!json_path.empty()) {
    std::ofstream(json_path) << all.dump(2) << "\n";
    std::fprintf(stderr, "wrote %s\n", json_path.c_str());
  }
  std::printf("targets: %s\n", all_ok ? "all met" : "some missed (see above)");
  return 0;
}
