// The CPU anchors of the strategy benchmark: STREAM triad, memory latency, random-row probe.
#include "measure/anchors.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "edo/kernels/bench.h"
#include "edo/kernels/host_buffer.h"
#include "stopwatch.h"

namespace edo::kernels {

namespace {
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
}  // namespace

namespace bench {

Triad::Triad(int threads, std::uint64_t bytes_per_array)
    : n_(std::max<std::uint64_t>(1024, bytes_per_array / sizeof(double))), nt_(std::max(1, threads)),
      ab_(n_ * 8, false), bb_(n_ * 8, false), cb_(n_ * 8, false) {
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

double Triad::pass() {
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

RowProbe::RowProbe(const std::uint8_t* base, std::uint64_t entries, double read_bytes, double stride, int threads, int distance)
    : base_(base), entries_(std::max<std::uint64_t>(1, entries)), read_(static_cast<std::uint64_t>(read_bytes)),
      stride_(static_cast<std::uint64_t>(stride)), threads_(std::max(1, threads)), distance_(std::max(1, distance)) {}

// Every 64-byte line of each row is loaded once (one 8-byte word per line; the rest of the
// line comes with it), rows `distance` ahead are prefetched into L2 as the kernels do. The
// words are summed so that the loads cannot be dropped.
double RowProbe::pass(const std::vector<std::vector<std::int64_t>>& batches) {
  std::uint64_t sink = 0;
  const auto t0 = Clock::now();
#pragma omp parallel num_threads(threads_) reduction(^ : sink)
  {
    const int t = omp_get_thread_num(), T = omp_get_num_threads();
    for (const auto& b : batches) {
      const std::int64_t n = static_cast<std::int64_t>(b.size());
      const std::int64_t lo = n * t / T, hi = n * (t + 1) / T;
      for (std::int64_t i = lo; i < hi; ++i) {
        if (i + distance_ < hi) {
          const std::uint8_t* q = base_ + static_cast<std::uint64_t>(b[i + distance_]) % entries_ * stride_;
          const auto start = reinterpret_cast<std::uintptr_t>(q);
          for (std::uintptr_t a = start & ~std::uintptr_t{63}; a < start + read_; a += 64)
            __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 2);
        }
        const std::uint8_t* p = base_ + static_cast<std::uint64_t>(b[i]) % entries_ * stride_;
        const auto start = reinterpret_cast<std::uintptr_t>(p);
        for (std::uintptr_t a = start & ~std::uintptr_t{63}; a < start + read_; a += 64) {
          const std::uintptr_t w = std::max(a, start);
          sink ^= *reinterpret_cast<const std::uint64_t*>(w & ~std::uintptr_t{7});
        }
      }
    }
  }
  const double s = seconds_since(t0);
  sink_ ^= sink;
  std::uint64_t rows = 0;
  for (const auto& b : batches) rows += b.size();
  return static_cast<double>(rows) / s;
}

}  // namespace bench

double triad_gbs(int threads, std::uint64_t bytes_per_array, int reps) {
  bench::Triad t(threads, bytes_per_array);
  std::vector<double> gbs;
  for (int r = 0; r < reps; ++r) gbs.push_back(t.pass());
  return median_of(gbs);
}

double row_probe_rows_per_s(const std::uint8_t* base, std::uint64_t entries, double read_bytes, double stride,
                            const std::vector<std::vector<std::int64_t>>& batches, int threads, int distance) {
  bench::RowProbe p(base, entries, read_bytes, stride, threads, distance);
  p.pass(batches);  // warm-up
  return p.pass(batches);
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

}  // namespace edo::kernels
