// Seconds of steady-clock time since t0: what the benchmarks and the anchors time with.
#pragma once

#include <chrono>

namespace edo::kernels {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace edo::kernels
