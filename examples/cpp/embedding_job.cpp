// A small C++ job that reads two embedding tables and tells edo about them through the C API
// (edo/edo.h): the example `make demo` records and the install test builds against an installed
// edo. Without `edo record` (or EDO_OUTPUT) every edo_* call is a no-op and the job runs as is.
//
//   edo record -o cpp.edodb -- ./edo-embedding-job [steps]
#include <edo/edo.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

struct Table {
  const char* name;
  uint64_t rows;
  uint32_t dim;
  double zipf;  // skew of the rows this job reads
  std::vector<float> weights;
  int64_t handle = -1;
};

// Row ids with a bounded Zipf(s) law over 0..rows-1 (row 0 the hottest), by inverting the CDF.
std::vector<int64_t> zipf_rows(const Table& t, size_t count, std::mt19937_64& rng) {
  std::vector<double> cdf(t.rows);
  double sum = 0;
  for (uint64_t r = 0; r < t.rows; ++r) cdf[r] = (sum += std::pow(double(r + 1), -t.zipf));
  std::uniform_real_distribution<double> u(0.0, sum);
  std::vector<int64_t> out(count);
  for (auto& row : out) {
    double x = u(rng);
    uint64_t lo = 0, hi = t.rows - 1;
    while (lo < hi) {
      uint64_t mid = (lo + hi) / 2;
      if (cdf[mid] < x) lo = mid + 1; else hi = mid;
    }
    row = int64_t(lo);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  if (steps <= 0) {
    std::fprintf(stderr, "edo-embedding-job: steps must be a positive number, got '%s'\n", argv[1]);
    return 2;
  }
  std::vector<Table> tables = {{"cpp.user", 100000, 32, 1.1, {}}, {"cpp.item", 20000, 64, 0.8, {}}};
  for (auto& t : tables) {
    t.weights.assign(t.rows * t.dim, 0.01f);
    t.handle = edo_table_register(t.name, t.weights.data(), t.rows, t.dim, EDO_F32, EDO_HOST);
    if (t.handle < 0) {
      std::fprintf(stderr, "edo-embedding-job: edo_table_register(%s): %s\n", t.name,
                   edo_strerror(int(t.handle)));
      return 1;
    }
  }
  edo_note("example", "examples/cpp/embedding_job.cpp");
  std::mt19937_64 rng(7);
  double checksum = 0;
  for (int s = 0; s < steps; ++s) {
    for (auto& t : tables) {
      std::vector<int64_t> rows = zipf_rows(t, 4096, rng);
      // The job's own work: sum the rows it reads (a pooled embedding bag).
      for (int64_t r : rows) checksum += t.weights[uint64_t(r) * t.dim];
      int rc = edo_table_lookup(t.handle, rows.data(), rows.size(), EDO_I64, EDO_HOST, nullptr);
      if (rc != EDO_OK) std::fprintf(stderr, "edo-embedding-job: edo_table_lookup: %s\n", edo_strerror(rc));
    }
    edo_step();
  }
  std::printf("edo-embedding-job: %d steps, %zu tables, checksum %.2f\n", steps, tables.size(), checksum);
  return 0;
}
