// What the library adds to its own process's environment at load, so that an untraced-looking
// start (`LD_PRELOAD=libedo_trace.so EDO_OUTPUT=run.edotrace python3 train.py`, without `edo
// record`) records what `edo record` would: Python processes find the PyTorch hook
// (PYTHONPATH), the hook finds the library (EDO_TRACE_LIB), NVTX finds the injection
// (NVTX_INJECTION64_PATH), and the job's later processes know its first one (EDO_ROOT_PID:
// only that one prints the settings warnings). Python reads PYTHONPATH after the library's
// constructor has run, and the job's children inherit all of them. A value the job already set is kept (and
// EDO_TRACE_LIB that names no readable file is replaced, with a warning).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace edo::capture {

struct JobEnvInputs {
  std::string lib_path;                                  // this library, absolute
  long pid = 0;                                          // this process
  std::function<const char*(const char*)> get;           // getenv
  std::function<bool(const std::string&)> is_dir;        // folder exists
  std::function<bool(const std::string&)> is_readable;   // file can be read
};

// The (name, value) pairs to set; warnings appended one line each.
std::vector<std::pair<std::string, std::string>> job_environment(const JobEnvInputs& in,
                                                                 std::vector<std::string>* warnings);

// Applies job_environment() to this process when that is safe (a single thread: setenv
// races with other threads' getenv). Called by the library's constructor.
void set_up_job_environment(const std::string& lib_path, std::vector<std::string>* warnings);

}  // namespace edo::capture
