// `edo env`: the environment that traces a job without `edo record` (frames into a file, then
// `edo import`), as shell lines to eval: for launchers that start the job themselves (a
// cluster scheduler, torchrun, a container entry point).
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>

#include "command.h"
#include "support/trace_library.h"

namespace edo::cli::env_command {
namespace {

struct EnvOptions {
  std::string output;
};

// Single-quoted for sh: ' becomes '\''.
std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int run_env(const EnvOptions& o) {
  if (o.output.empty()) throw UsageError("missing the trace file to write (edo env -o run.edotrace)");
  const TraceLibrary t = find_trace_library();
  // Absolute: the job's processes may change directory before they write.
  std::string out = o.output;
  if (out[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd)) out = std::string(cwd) + "/" + out;
  }
  std::printf("export EDO_OUTPUT=%s\n", shell_quoted(out).c_str());
  std::string preload = t.lib;
  if (const std::string runtime = sanitizer_runtime(); !runtime.empty()) {  // sanitizer builds only
    preload = runtime + ":" + preload;
    std::printf("export ASAN_OPTIONS=\"${ASAN_OPTIONS:-detect_leaks=0}\"\n");
  }
  std::printf("export LD_PRELOAD=%s${LD_PRELOAD:+:$LD_PRELOAD}\n", shell_quoted(preload).c_str());
  std::printf("export EDO_TRACE_LIB=%s\n", shell_quoted(t.lib).c_str());
  std::printf("export NVTX_INJECTION64_PATH=%s\n", shell_quoted(t.lib).c_str());
  if (!t.boot.empty())
    std::printf("export PYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH}\n", shell_quoted(t.boot + ":" + t.python).c_str());
  // One run id for every process the launcher starts (ranks it starts side by side would
  // otherwise each make their own, and `edo import` would refuse to merge them).
  std::random_device rd;
  std::printf("export EDO_RUN_ID=%08x%08x\n", rd(), rd());
  return 0;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<EnvOptions>();
  sub.add_option("-o,--output", o->output, "the trace file the job writes (its children write <file>.<pid>)")->required();
  sub.footer(
      "\nPrints shell lines (export NAME=value) that trace every process started after them, like\n"
      "`edo record` does but without a collector: the frames go to the trace file, and\n"
      "`edo import <file> <file>.*` turns them into a database afterwards.\n\n"
      "Example:\n"
      "  (eval \"$(edo env -o run.edotrace)\"; python3 train.py)\n"
      "  edo import run.edotrace run.edotrace.* -o run.edodb\n\n"
      "LD_PRELOAD and EDO_OUTPUT alone are enough: the library sets the other three itself when\n"
      "they are unset (PYTHONPATH for the PyTorch hook, EDO_TRACE_LIB, NVTX_INJECTION64_PATH).\n"
      "EDO_RUN_ID names the run: every process started under these lines writes it into its file\n"
      "(eval them again for the next run, or `edo import` refuses to merge stale files with it).\n");
  return [o] { return run_env(*o); };
}

}  // namespace

EDO_REGISTER_COMMAND("env", "print the variables that trace a job without edo record", 16, setup);

}  // namespace edo::cli::env_command
