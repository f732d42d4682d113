// EDO_* settings of the preload library, parsed once at load. A bad value (garbage, negative,
// out of range, too large) produces one warning naming the variable and the default used; it
// never stops the job. An empty value is the same as an unset one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace edo::capture {

struct Config {
  std::string channel;             // EDO_CHANNEL: Unix socket of `edo record`
  std::string output;              // EDO_OUTPUT: frame file (children: <path>.<pid>)
  std::string unsent;              // EDO_UNSENT: with a channel, what it cannot deliver goes to <prefix>.<pid>
  uint64_t flush_ms = 1000;        // EDO_FLUSH_MS
  uint64_t exact_rows = uint64_t{1} << 26;  // EDO_EXACT_ROWS
  uint64_t top_k = uint64_t{1} << 16;       // EDO_TOPK
  uint64_t max_buffer_mb = 256;    // EDO_MAX_BUFFER_MB: host+pinned index staging bound
  uint64_t max_events = uint64_t{1} << 20;  // EDO_MAX_EVENTS: memory events buffered per flush
  uint64_t window_steps = 0;       // EDO_WINDOW_STEPS: drift window every N steps (0: per flush)
  uint64_t max_memory_mb = 4096;   // EDO_MAX_MEMORY_MB: bound on the tables' statistics state
  uint64_t max_device_mb = 1024;   // EDO_MAX_DEVICE_MB: bound on edo's own device memory (cuMemAlloc)
  bool async = true;               // EDO_ASYNC: ingest on the background thread
  bool lru = true;                 // EDO_LRU: stack distances (LRU hit-rate curve); 0 = counts only
  bool cuda = true;                // EDO_CUDA_CAPTURE: CUPTI + device-index copies
  bool verbose = false;            // EDO_VERBOSE
  bool weights = false;            // EDO_WEIGHTS: keep weight snapshots (edo_table_weights, torch hook)
  uint64_t weight_rows = 65536;    // EDO_WEIGHT_ROWS: rows per table in a snapshot
  std::string cupti_path;          // EDO_CUPTI_PATH
  bool torch = true;               // EDO_TORCH (read by the Python hook; checked here too)
  bool torch_scan = true;          // EDO_TORCH_SCAN (read by the Python hook; checked here too)
  int64_t root_pid = 0;            // EDO_ROOT_PID (set by `edo record`, or by the first traced process)
  int64_t output_owner = 0;        // EDO_OUTPUT_OWNER (set by the process that owns EDO_OUTPUT)
  std::string run_id;              // EDO_RUN_ID (made by the run's first traced process, inherited)

  bool active() const { return !channel.empty() || !output.empty(); }
};

struct VarDoc {
  const char* name;
  const char* default_value;
  const char* meaning;
};
// What a switch (EDO_ASYNC, EDO_LRU, ...) accepts, any case: named by the warning for any other
// value and listed by `edo record --help`.
inline constexpr const char* kSwitchSpellings = "1, true, yes or on to turn it on; 0, false, no or off to turn it off";
// Every variable the library (and `edo record`) reads, for `edo record --help`.
const std::vector<VarDoc>& documented_variables();

// A fresh run id: 16 lower-case hex digits (getrandom, or time, pid and an address mixed
// when it is unavailable).
std::string new_run_id();
// Whether `id` can be a run id: 1..32 characters of [0-9a-z].
bool valid_run_id(const char* id);

// getenv-like lookup (nullptr when unset). Warnings are appended, one line each.
Config parse_config(const std::function<const char*(const char*)>& get,
                    std::vector<std::string>* warnings);

}  // namespace edo::capture
