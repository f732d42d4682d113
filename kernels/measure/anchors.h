// Internal to edo_kernels_bench: the CPU anchors as objects whose passes the benchmark
// interleaves with the strategies' passes (same minutes of a shared machine).
#pragma once

#include <cstdint>
#include <vector>

#include "edo/kernels/host_buffer.h"

namespace edo::kernels::bench {

// STREAM triad a = b + s*c over three arrays; pass() returns GB/s (3 arrays counted).
class Triad {
 public:
  Triad(int threads, std::uint64_t bytes_per_array);
  double pass();
  std::uint64_t bytes() const { return 3 * n_ * 8; }

 private:
  std::uint64_t n_;
  int nt_;
  HostBuffer ab_, bb_, cb_;
};

// The random-row read probe (bench.h): pass() reads every id of the batches once and returns
// rows/s. The memory at `base` must hold entries * stride bytes.
class RowProbe {
 public:
  RowProbe(const std::uint8_t* base, std::uint64_t entries, double read_bytes, double stride, int threads, int distance);
  double pass(const std::vector<std::vector<std::int64_t>>& batches);

 private:
  const std::uint8_t* base_;
  std::uint64_t entries_, read_, stride_;
  int threads_, distance_;
  std::uint64_t sink_ = 0;
};

}  // namespace edo::kernels::bench
