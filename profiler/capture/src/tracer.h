// The in-process half of the tracer (internal to libedo_trace.so): the functions its parts
// call on each other. Where they live:
//   lifecycle.cpp     load, background thread, flush, exit, exec, fork, signals
//   process.{h,cpp}   the process-wide state and the current Session (session.{h,cpp})
//   registry.{h,cpp}  tables, ties, extra bytes, address index
//   ingest_queue.*    host batches for the background thread
//   flush.h           snapshot of a session (flush.cpp) and its frames (flush_encode.cpp)
//   sink.*            socket or frame file
//   nvtx_ranges.*     NVTX range bookkeeping (nvtx.cpp is the injection entry)
//   tracer_config.*   what the EDO_* settings mean for the parts
//   api_backends.cpp  C API back ends; events.cpp: CUPTI events into the session
//   cuda_driver.*, cupti_subscriber.cpp, device_lookup.cpp (device_counting.*, device/,
//   device_staging.*): the CUDA side
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edo/capture/config.h"
#include "edo/stats/table_stats.h"
#include "edo/wire/attribution.h"
#include "edo/wire/wire.h"

namespace edo::capture {

// Runs the library's constructor if it has not run yet (a C API call from another
// constructor that ran first).
void ensure_initialized();
// Starts the session's background thread if it is not running (after a fork: lazily).
void ensure_background_thread();

// True once the library is configured to record (EDO_CHANNEL or EDO_OUTPUT set).
bool tracer_active();
const Config& tracer_config();
void tracer_log(const std::string& line);     // one line on stderr, prefixed "edo: "
void tracer_verbose(const std::string& line); // only with EDO_VERBOSE=1

// C API back ends (never throw).
int64_t api_register(const char* name, const void* base, uint64_t rows, uint32_t dim, int dtype,
                     int device);
int api_lookup(int64_t table, const void* indices, uint64_t count, int type, int device,
               void* stream);
int api_set_extra_bytes(int64_t table, const char* kind, uint64_t bytes);
int api_step();

// Events from NVTX / CUPTI.
int64_t now_ns();  // monotonic
void record_memory_event(int64_t bytes, uint64_t address, uint64_t stream, int32_t device,
                         const char* kind);
void record_kernel_launch(const std::string& name, const std::vector<std::string>& tables);
// GPU time of one launch of `name`; `tables`: those that launch read (empty when unknown).
void record_kernel_time(const std::string& name, uint64_t ns, const std::vector<std::string>& tables);
void record_note(const std::string& key, const std::string& value);
void count_drop(const char* counter, uint64_t n);
// Snapshot of the registered tables' address ranges (for kernel arguments).
std::shared_ptr<const wire::AddressIndex> table_address_index();

// NVTX range bookkeeping (thread-local stacks, per-name totals).
void range_push(const std::string& name);
void range_pop();
uint64_t range_start(const std::string& name);
void range_end(uint64_t id);

// Host ingest of device-index batches, called by the background thread (device_staging.cpp).
void ingest_indices(int64_t table, const void* indices, uint64_t count, int type);

// Flush everything now (exec, _exit). Safe to call from any normal thread context.
void flush_now(bool final_goodbye, int reason, int code);
// The process is about to send itself a signal that ends it (the kill()/raise() wrappers):
// the background thread sends a final flush while the caller waits, at most
// kFatalSignalFlushWaitMs. Async-signal-safe (the caller may be the job's own signal
// handler re-raising its signal): atomics, clock_gettime and nanosleep only.
inline constexpr int kFatalSignalFlushWaitMs = 2000;
void flush_before_fatal_signal(int sig);
// The exec failed and the process goes on: resume tracing (the session continues).
void resume_after_failed_exec();
// pid of the current session owner; hooks compare it with getpid() (vfork children).
int64_t session_pid();

// Weight snapshots (weights.cpp): the flush tells it every delta it ships (EDO_WEIGHTS only)
// and takes its frames; weights.cpp reads a table's counts not shipped yet from the session.
int api_table_weights(int64_t table, const void* weights, uint64_t row_stride, int device, void* stream);
void weights_note_delta(const wire::TableDelta& delta);
std::string weights_take_frames();
void weights_after_fork_child();
// Device rows for a snapshot (weights_cuda.cpp; EDO_ERR_NO_CUDA without CUDA): copies the rows
// `sorted` (ascending) of the table at `base` (row `stride` bytes apart) into out[i * row_bytes]
// for sorted[i], after the work already queued on the job's `stream`, on a private stream (the
// job's streams are never synchronised).
int cuda_read_rows(const void* base, uint64_t stride, uint64_t row_bytes, const std::vector<uint64_t>& sorted,
                   char* out, void* stream);

// A segment of a table counted on the device (device_counting.cpp), into the session.
void ingest_counted(int64_t table, const stats::CountedSegment& segment);

// CUDA side (device_lookup.cpp / cupti_subscriber.cpp); no-ops without CUDA (cuda_off.cpp).
int cuda_lookup(int64_t table, const void* indices, uint64_t count, int type, void* stream);
void cuda_poll(bool wait_all);  // background thread: take finished device batches
// Flush: hand the device-counted tables' segments to the session (`final`: after every batch).
void cuda_collect(bool final);
// True for an address in one of the tracer's own device allocations (not the job's memory).
bool cuda_owns_address(uint64_t address);
void cuda_after_fork_child();
void cupti_start();             // subscribe if a driver exists
void cupti_flush();             // flush activity buffers (background thread / exit)
void cupti_poll();              // background thread: attach CUPTI once CUDA gets loaded
void cupti_release(const std::string& to_tool);  // edo_release_gpu_capture()

}  // namespace edo::capture
