// A counting global allocator for tests that bound memory: every operator new/delete of the
// test binary goes through counting_allocator.cpp, which tracks the bytes live now, the peak
// since the last reset, and the largest single request. Used to measure what hostile input
// makes a decoder allocate.
#pragma once

#include <cstddef>

namespace edo::test {

struct AllocationStats {
  size_t peak_live_above_start = 0;  // bytes, highest live total minus the total at reset()
  size_t largest_request = 0;        // bytes, the biggest single operator new
  size_t requests = 0;
};

// Starts a measurement window (this thread's view of the process-wide counters).
void reset_allocation_stats();
AllocationStats allocation_stats();

}  // namespace edo::test
