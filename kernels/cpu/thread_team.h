// The team of threads that runs CPU lookups. Unlike an OpenMP parallel region, waiting
// threads spin only briefly (about 20 microseconds) and then sleep, so that a lookup on a
// machine shared with other busy processes is not held up by spinning threads; on a quiet
// machine back-to-back lookups still find the workers spinning. Work is split with a shared
// atomic counter (dynamic chunks), so a descheduled thread does not hold the others up.
#pragma once

#include <vector>

#include "edo/kernels/cpu.h"

namespace edo::kernels::cpu {

using TeamFn = void (*)(void* ctx, int thread, int threads);

// Runs fn(ctx, t, threads) for t = 0..threads-1 (t = 0 on the calling thread) and returns when
// all are done. If the team is busy (another thread is running a lookup), runs fn(ctx, 0, 1).
void team_run(int threads, TeamFn fn, void* ctx);

// Pins team thread t to the t-th CPU of this process's affinity mask (calling thread: first).
void team_pin(int threads);

// allowed_cpus(): edo/kernels/cpu.h (the CPUs this process could use when first asked, before
// any pinning narrowed the calling thread's own mask).

}  // namespace edo::kernels::cpu
