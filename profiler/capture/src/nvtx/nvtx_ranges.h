// NVTX range bookkeeping: per-thread stacks of pushed ranges, start/end handles, and the
// innermost open range of the calling thread (lookups and allocations are attributed to it).
#pragma once

#include <cstdint>
#include <string>

#include "session.h"

namespace edo::capture {

// Thread-local stacks (nvtxRangePush/Pop) and start/end handles (nvtxRangeStart/End), with
// per-name totals in the current session.
void range_push(const std::string& name);
void range_pop();
uint64_t range_start(const std::string& name);
void range_end(uint64_t id);

// The calling thread's innermost pushed range in the current session, or nullptr.
RangeTotals* innermost_range();

}  // namespace edo::capture
