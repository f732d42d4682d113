// The library's life in the process (lifecycle.cpp): load, background thread, flushes at
// exec, exit and fatal signals.
#pragma once

#include <cstdint>

namespace edo::capture {

// Runs the library's constructor if it has not run yet (a C API call from another
// constructor that ran first).
void ensure_initialized();
// Starts the session's background thread if it is not running (after a fork: lazily).
void ensure_background_thread();
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

}  // namespace edo::capture
