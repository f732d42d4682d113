// bench_kernels: the project's CPU kernel figures beside their anchors, from ONE run.
//
//   bench_kernels [--threads N] [--reps N] [--zipf] [--json FILE] [--shapes 10M,1M] [--backend cpu|cuda]
//                 [--strategies LIST] [--batch N]
//
// For each shape (default 10M x 128 and 1M x 128, uniform indices, 2 threads, batch 65536
// indices in bags of 32) it measures the STREAM triad of this machine, then fp32, int8 and int4
// bags, and prints:
//   fp32 bag row GB/s vs triad GB/s      (target >= 0.8x on 10M x 128)
//   int8 / int4 bag rows/s vs fp32       (target >= 2x)
// The PyTorch anchor (torch.nn.functional.embedding_bag) is compare_torch.py's job.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "edo/kernels/bench.h"

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
    else {
      std::fprintf(stderr, "usage: bench_kernels [--threads N] [--reps N] [--zipf] [--json FILE] [--shapes 10M,1M] [--backend cpu|cuda] [--strategies LIST] [--batch N]\n");
      return 2;
    }
  }
  nlohmann::json all = nlohmann::json::array();
  bool ok = true;
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
    for (const auto& r : rep.results)
      if (r.name == "fp32") f32 = &r;
    char line[512];
    std::snprintf(line, sizeof line, "== %s %llu x 128 %s, %d threads: anchor %s %.1f GB/s\n", backend.c_str(),
                  static_cast<unsigned long long>(c.rows), zipf > 0 ? "zipf 1.05" : "uniform", rep.threads,
                  rep.anchor_name.c_str(), rep.anchor_gbs);
    summary += line;
    if (f32) {
      const double ratio = f32->bag_gbs / rep.anchor_gbs;
      const bool gate = c.rows >= 10'000'000 && zipf <= 0;
      std::snprintf(line, sizeof line, "   fp32 bag   %7.1f Mrows/s  %6.1f GB/s row bytes   vs %s %.2fx  (target >= 0.80x%s)%s\n",
                    f32->bag_rows_per_s / 1e6, f32->bag_gbs, rep.anchor_name.c_str(), ratio,
                    gate ? "" : ", gated on 10M uniform only", gate ? (ratio >= 0.8 ? "  MET" : "  MISSED") : "");
      summary += line;
      if (gate && ratio < 0.8) ok = false;
      for (const auto& r : rep.results) {
        if (r.name == "fp32") continue;
        const double rr = r.bag_rows_per_s / f32->bag_rows_per_s;
        const bool q = r.name == "int8" || r.name == "int4";
        std::snprintf(line, sizeof line, "   %-10s %7.1f Mrows/s  %6.1f GB/s row bytes   vs fp32 bag %.2fx rows/s%s\n", r.name.c_str(),
                      r.bag_rows_per_s / 1e6, r.bag_gbs, rr, q ? (rr >= 2.0 ? "  (target >= 2x) MET" : "  (target >= 2x) MISSED") : "");
        summary += line;
        if (q && rr < 2.0) ok = false;
      }
    }
  }
  std::printf("%s", summary.c_str());
  if (!json_path.empty()) {
    std::ofstream(json_path) << all.dump(2) << "\n";
    std::fprintf(stderr, "wrote %s\n", json_path.c_str());
  }
  std::printf("targets: %s\n", ok ? "all met" : "some missed (see above)");
  return 0;
}
