// NVTX range bookkeeping: per-thread stacks of pushed ranges, start/end handles, and the
// innermost open range of the calling thread (lookups and allocations are attributed to it).
#pragma once

#include "session.h"

namespace edo::capture {

// The calling thread's innermost pushed range in the current session, or nullptr.
RangeTotals* innermost_range();

}  // namespace edo::capture
