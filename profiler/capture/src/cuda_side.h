// The CUDA side as the rest of the library sees it (device_lookup.cpp, cupti_subscriber.cpp;
// no-ops without CUDA: cuda_off.cpp).
#pragma once

#include <cstdint>
#include <string>

namespace edo::capture {

int cuda_lookup(int64_t table, const void* indices, uint64_t count, int type, void* stream);
void cuda_poll(bool wait_all);  // background thread: take finished device batches
// Flush: hand the device-counted tables' segments to the session (`final`: after every batch).
void cuda_collect(bool final);
// True for an address in one of the tracer's own device allocations (not the job's memory).
bool cuda_owns_address(uint64_t address);
void cupti_start();             // subscribe if a driver exists
void cupti_flush();             // flush activity buffers (background thread / exit)
void cupti_poll();              // background thread: attach CUPTI once CUDA gets loaded
void cupti_release(const std::string& to_tool);  // edo_release_gpu_capture()
// fork(): the CUDA side's process-wide locks (CUPTI's attach lock) are taken across it
// (lifecycle.cpp atfork_prepare/atfork_parent; the child's are released by
// cuda_after_fork_child()).
void cuda_before_fork();
void cuda_after_fork_parent();
// A forked child: CUDA cannot be used there. The CUDA side's objects (device counting and
// staging, the CUPTI subscription) stay as the fork copied them, never touched again (their
// locks may be held by threads the child does not have); every entry point above returns
// at once from now on. CUPTI callbacks still arriving in the child go to a new CuptiRun
// (cupti_state.h).
void cuda_after_fork_child();

}  // namespace edo::capture
