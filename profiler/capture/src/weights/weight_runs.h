// How a weight snapshot reads scattered rows out of device memory: rows sorted by address are
// grouped into runs that one copy each fetches (a gap of a few rows is cheaper to copy than a
// second copy call), and each run is cut to fit the pinned staging buffer. Header-only, pure:
// the device reader (weights_cuda.cpp) follows it and tests/unit/capture checks it on the CPU.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace edo::capture {

struct CopyRun {
  uint64_t first_row = 0;  // the run copies rows [first_row, last_row] (stride apart)
  uint64_t last_row = 0;
  size_t begin = 0, end = 0;  // the wanted rows it serves: sorted[begin, end)
};

// `sorted` ascending, no duplicates. A run grows while the next wanted row starts within
// `gap_bytes` of the run's end and the run stays within `max_bytes` (at least one row).
inline std::vector<CopyRun> plan_copy_runs(const std::vector<uint64_t>& sorted, uint64_t stride, uint64_t row_bytes,
                                           uint64_t gap_bytes, uint64_t max_bytes) {
  std::vector<CopyRun> runs;
  size_t i = 0;
  while (i < sorted.size()) {
    CopyRun r{sorted[i], sorted[i], i, i + 1};
    while (r.end < sorted.size()) {
      const uint64_t next = sorted[r.end];
      const uint64_t gap = (next - r.last_row) * stride - std::min(row_bytes, stride);
      const uint64_t bytes = (next - r.first_row) * stride + row_bytes;
      if (gap > gap_bytes || bytes > max_bytes) break;
      r.last_row = next;
      ++r.end;
    }
    runs.push_back(r);
    i = r.end;
  }
  return runs;
}

inline uint64_t run_bytes(const CopyRun& r, uint64_t stride, uint64_t row_bytes) {
  return (r.last_row - r.first_row) * stride + row_bytes;
}

}  // namespace edo::capture
