// Where libedo_trace.so and its Python hook are, seen from the running `edo`: next to the
// executable, in ../lib (the build tree and an installed prefix alike).
#pragma once

#include <string>

namespace edo::cli {

struct TraceLibrary {
  std::string lib;        // absolute path of libedo_trace.so
  std::string python;     // <libdir>/python: the `edo` package ("" when absent)
  std::string boot;       // <libdir>/python/edo_boot: the sitecustomize hook ("" when absent)
};

// The folder of the running `edo` executable ("." when /proc/self/exe cannot be read).
std::string executable_dir();

// Throws Failure naming the expected path when the library is not there.
TraceLibrary find_trace_library();

// In a sanitizer build, the sanitizer runtime that must come first in a traced job's LD_PRELOAD
// (the instrumented libedo_trace.so refuses to start after another library); "" otherwise.
// `edo record` and `edo env` both put it first and default ASAN_OPTIONS to detect_leaks=0 (the
// job's own leaks are not ours to report).
std::string sanitizer_runtime();

}  // namespace edo::cli
