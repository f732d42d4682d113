// The two objects the preload library's state lives in:
//  * Process: what the whole process keeps, across fork() too (settings, the table registry,
//    NVTX start/end handles, NVTX registered strings and domains, weight snapshots' history);
//    each of its mutexes is taken across fork() (lifecycle.cpp);
//  * Session: what one process reports (session.h: counts, events, kernels, ranges, queued
//    weight frames, the sink); a forked child replaces it with a new one.
// The CUDA side (cuda_side.h) is process-wide too, and dead in a forked child: CUDA cannot be
// used there, so its objects are left as the fork copied them and never touched again
// (cuda_after_fork_child()); the CUPTI callbacks that may still arrive there go to a new
// CuptiRun (cupti_state.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "edo/capture/config.h"
#include "nvtx_names.h"
#include "edo/stats/table_stats.h"
#include "registry.h"
#include "session.h"
#include "weight_state.h"

namespace edo::capture {

// NVTX nvtxRangeStart/End handles: an id may be started on one thread and ended on another,
// and a range started before fork() may end in the child.
class RangeHandles {
 public:
  uint64_t start(const std::string& name, int64_t now);
  // The range's name and start time; false for an unknown (or already ended) id.
  bool end(uint64_t id, std::string& name, int64_t& start);
  std::mutex& mutex() { return mu_; }

 private:
  struct Open {
    std::string name;
    int64_t start = 0;
  };
  std::mutex mu_;
  uint64_t next_ = 1;
  std::unordered_map<uint64_t, Open> open_;
};

struct Process {
  explicit Process(const Config& c);

  const Config cfg;
  const bool active;
  const stats::StatsConfig stats;
  std::atomic<bool> async;  // EDO_ASYNC, turned off when no background thread can be started
  Registry registry;
  RangeHandles range_handles;
  NvtxNames nvtx_names;
  WeightHistory weights;

  // A new session for the calling process (pid, parent, start times, sink).
  Session* new_session(bool quiet) const;
};

// The library's state; nullptr before the constructor ran.
Process* process();
// The current session (never nullptr once process() is set).
Session& session();
// A forked child's new session; only ever called where the process has a single thread.
void replace_session(Session* s);
// Called once by the library's constructor.
void install_process(Process* p, Session* s);

}  // namespace edo::capture
