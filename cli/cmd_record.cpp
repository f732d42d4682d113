// `edo record`: run a job with libedo_trace.so preloaded, collect the frames of every process
// that loads it (one session each) over a Unix socket, and keep the .edodb up to date while
// the job runs (saved every ~2 s and at the end, so a killed job leaves what was flushed).
// The recording itself is collector::Recorder (collector/include/edo/collector/recorder.h);
// this file parses the arguments, builds the job's environment, and prints.
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "command.h"
#include "edo/capture/config.h"
#include "edo/collector/collector.h"
#include "edo/collector/job_launcher.h"
#include "edo/collector/recorder.h"
#include "support/elf_class.h"
#include "support/output_file.h"
#include "support/terminal.h"
#include "support/trace_library.h"
#include "version.h"

extern char** environ;

namespace edo::cli::record_command {
namespace {

struct RecordOptions {
  std::string output;
  bool force = false;
  uint64_t exact_rows = 0;
  uint64_t flush_ms = 0;
  bool weights = false;        // --weights: EDO_WEIGHTS=1 (weight snapshots for the tuner)
  uint64_t weight_rows = 0;    // --weight-rows: EDO_WEIGHT_ROWS
  std::string apply_plan;      // --apply-plan: EDO_APPLY_PLAN (absolute), read by the PyTorch hooks
  std::vector<std::string> command;
};

std::string canonical(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// Returns the executable path, or "" with errno-style code in `err` (127 not found, 126 not
// executable).
std::string resolve_command(const std::string& cmd, int& err) {
  auto check = [&](const std::string& p) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) return 127;
    return access(p.c_str(), X_OK) == 0 ? 0 : 126;
  };
  if (cmd.find('/') != std::string::npos) {
    err = check(cmd);
    return err ? "" : cmd;
  }
  const char* path = getenv("PATH");
  std::string ps = path ? path : "/usr/local/bin:/usr/bin:/bin";
  err = 127;
  size_t start = 0;
  while (start <= ps.size()) {
    size_t end = ps.find(':', start);
    if (end == std::string::npos) end = ps.size();
    std::string dir = ps.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string cand = dir + "/" + cmd;
    int e = check(cand);
    if (e == 0) {
      err = 0;
      return cand;
    }
    if (e == 126) err = 126;
    start = end + 1;
  }
  return "";
}

std::string variables_help() {
  std::string s =
      "\nThe job runs unchanged; `edo record` sets LD_PRELOAD (prepended), NVTX_INJECTION64_PATH (unless another\n"
      "tool's is set) and, when <libdir>/python exists, PYTHONPATH for the torch hook.\n"
      "Exit code: the job's (128+signal when it was killed); 127 when the command does not exist;\n"
      "1 when the output cannot be written (said before the job starts), or when the job succeeded but\n"
      "the database could not be saved whole (a full disk mid-recording: one line says so, the job runs on;\n"
      "the file and edo report then say incomplete, why, and how much it holds), or not at all (no file is left).\n"
      "Signals: the job runs in a process group of its own (it does not lead it: setsid() works); SIGINT, SIGTERM,\n"
      "SIGHUP and SIGQUIT sent to edo record (its pid or its group: timeout, kill -TERM -PGID) reach the job once,\n"
      "after a flush; at an interactive shell the job has the terminal (Ctrl-C, Ctrl-Z reach it directly).\n"
      "If edo record dies (SIGKILL, a crash), the job runs on to its end; each traced process then keeps what it\n"
      "could not send in <output>.unsent.<pid> (edo import <output>.unsent.* makes a database of it; the output\n"
      "keeps what edo saved before, every ~2 s). See docs/losses.md.\n\n"
      "Environment you may set (read by libedo_trace.so in every traced process; a bad value prints\n"
      "one warning naming the variable and the default used, and the job runs on):\n";
  // The variables edo record sets for its own use are listed apart: a user does not set them.
  std::string internal;
  for (const auto& v : capture::documented_variables()) {
    if (std::string(v.default_value).rfind("(set by ", 0) == 0) {  // edo record, or the library
      internal += std::string(internal.empty() ? "" : ", ") + v.name;
      continue;
    }
    char line[512];
    std::snprintf(line, sizeof line, "  %-18s default %-20s %s\n", v.name, v.default_value, v.meaning);
    s += line;
  }
  s += std::string("Switches (a default of 0 or 1) take ") + capture::kSwitchSpellings + " (any case).\n";
  if (!internal.empty()) s += "\nSet by edo record for its own use (do not set them): " + internal + ".\n";
  return s;
}

// <output>.unsent, absolute.
std::string unsent_prefix(const std::string& out) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(out, ec);
  return (ec ? std::filesystem::path(out) : abs).string() + ".unsent";
}

// Processes that lost their connection while edo still ran (the job closed the tracer's
// descriptor) kept the rest in <prefix>.<pid>: said at the end, with how to read them. Only
// files written since `since` (this recording's start): an earlier recording's are not news.
void say_unsent_files(const std::string& prefix, std::filesystem::file_time_type since) {
  namespace fs = std::filesystem;
  const fs::path p(prefix);
  const std::string stem = p.filename().string() + ".";
  std::error_code ec;
  size_t n = 0;
  for (fs::directory_iterator it(p.parent_path().empty() ? fs::path(".") : p.parent_path(), ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code tec;
    if (it->path().filename().string().rfind(stem, 0) == 0 && fs::last_write_time(it->path(), tec) >= since && !tec) ++n;
  }
  if (n == 0) return;
  // The database to suggest: <output stem>-unsent.edodb, a name the <prefix>.* pattern does not
  // match (the command must work again).
  std::string db = prefix.substr(0, prefix.size() - std::string(".unsent").size());
  if (db.size() > 6 && db.compare(db.size() - 6, 6, ".edodb") == 0) db.resize(db.size() - 6);
  db += "-unsent.edodb";
  std::fprintf(stderr,
               "edo record: %zu process(es) lost their connection to edo and kept the rest of their trace in %s.<pid>: "
               "edo import %s.* -o %s\n",
               n, terminal_safe(prefix).c_str(), terminal_safe(prefix).c_str(), terminal_safe(db).c_str());
}

// The plan of --apply-plan, checked before the job starts (a trial run that would silently run
// the baseline is worse than none): its canonical path in `plan`, or a one-line error and 1.
// Its content is read (and validated whole) by the job's edo.apply_plan.
int check_apply_plan(const RecordOptions& o, std::string& plan) {
  if (o.apply_plan.empty()) return 0;
  struct stat st;
  if (stat(o.apply_plan.c_str(), &st) != 0 || S_ISDIR(st.st_mode) || access(o.apply_plan.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "edo record: --apply-plan %s: %s\n", terminal_safe(o.apply_plan).c_str(),
                 stat(o.apply_plan.c_str(), &st) != 0 ? std::strerror(errno)
                 : S_ISDIR(st.st_mode) ? "is a directory, not a plan file" : std::strerror(EACCES));
    return 1;
  }
  plan = canonical(o.apply_plan);
  const char* torch_hooks = getenv("EDO_TORCH");
  if (torch_hooks && std::string(torch_hooks) == "0") {
    std::fprintf(stderr, "edo record: --apply-plan needs the PyTorch hooks, which EDO_TORCH=0 turns off (unset it)\n");
    return 1;
  }
  return 0;
}

// The job's environment: edo's own environment without what edo sets, then the tracer
// (LD_PRELOAD, NVTX injection), where unsent frames go, the recording options and the Python hooks.
std::vector<std::string> job_environment(const RecordOptions& o, const TraceLibrary& trace, const std::string& unsent,
                                         const std::string& plan) {
  const std::string& lib = trace.lib;
  std::vector<std::string> env;
  auto getv = [](const char* n) -> std::string { const char* v = getenv(n); return v ? v : ""; };
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string k = kv.substr(0, kv.find('='));
    if (k == "LD_PRELOAD" || k == "NVTX_INJECTION64_PATH" || k == "EDO_CHANNEL" || k == "EDO_OUTPUT" || k == "EDO_UNSENT" ||
        k == "EDO_OUTPUT_OWNER" || k == "EDO_ROOT_PID" || k == "EDO_TRACE_LIB" || k == "PYTHONPATH" ||
        k == "EDO_APPLY_PLAN" ||
        (k == "EDO_EXACT_ROWS" && o.exact_rows) || (k == "EDO_FLUSH_MS" && o.flush_ms) ||
        (k == "EDO_WEIGHTS" && o.weights) || (k == "EDO_WEIGHT_ROWS" && o.weight_rows))
      continue;
    env.push_back(kv);
  }
  const std::string old_preload = getv("LD_PRELOAD");
  std::string preload = lib + (old_preload.empty() ? "" : ":" + old_preload);
  if (const std::string runtime = sanitizer_runtime(); !runtime.empty()) {  // sanitizer builds only
    preload = runtime + ":" + preload;
    if (getv("ASAN_OPTIONS").empty()) env.push_back("ASAN_OPTIONS=detect_leaks=0");
  }
  env.push_back("LD_PRELOAD=" + preload);
  // Only one NVTX tool can attach to a process: another tool's injection is left in place (the
  // job and that tool see no difference), and edo records everything but the NVTX ranges.
  const std::string old_nvtx = getv("NVTX_INJECTION64_PATH");
  if (!old_nvtx.empty() && canonical(old_nvtx) != lib) {
    std::fprintf(stderr,
                 "edo record: NVTX_INJECTION64_PATH is another tool's (%s): it keeps NVTX; edo records everything "
                 "but NVTX ranges (unset it to record them)\n",
                 terminal_safe(old_nvtx).c_str());
    env.push_back("NVTX_INJECTION64_PATH=" + old_nvtx);
  } else {
    env.push_back("NVTX_INJECTION64_PATH=" + lib);
  }
  env.push_back("EDO_TRACE_LIB=" + lib);
  env.push_back("EDO_UNSENT=" + unsent);
  if (o.exact_rows) env.push_back("EDO_EXACT_ROWS=" + std::to_string(o.exact_rows));
  if (o.flush_ms) env.push_back("EDO_FLUSH_MS=" + std::to_string(o.flush_ms));
  if (o.weights) env.push_back("EDO_WEIGHTS=1");
  if (o.weight_rows) env.push_back("EDO_WEIGHT_ROWS=" + std::to_string(o.weight_rows));
  if (!plan.empty()) env.push_back("EDO_APPLY_PLAN=" + plan);
  std::string pythonpath = getv("PYTHONPATH");
  if (getv("EDO_TORCH") != "0") {
    std::string add;
    if (!trace.boot.empty()) add = trace.boot;
    if (!trace.python.empty()) add += (add.empty() ? "" : ":") + trace.python;
    if (!add.empty()) pythonpath = add + (pythonpath.empty() ? "" : ":" + pythonpath);
  }
  if (!pythonpath.empty()) env.push_back("PYTHONPATH=" + pythonpath);

  return env;
}

// What edo record says at the end, and its exit code: the job's, unless the recording could not
// be saved whole or placed (then 1 when the job itself succeeded).
int say_outcome(const collector::RecordOutcome& r, const collector::Recorder& recorder, const RecordOptions& o,
                const std::string& out, const std::string& unsent, std::filesystem::file_time_type started) {
  const int code = r.code;
  if (r.nothing_saved) {
    // Not one save got through (issue 30 §5): no file is left that would read as a whole, empty
    // recording. A runtime failure, unless the job itself failed, whose code comes first.
    std::fprintf(stderr,
                 "edo record: nothing was recorded: %s could not be written at all (%s); the job ran to its end "
                 "(exit %d) untraced, its %llu lookups are lost; free space or choose another -o, and record again\n",
                 terminal_safe(out).c_str(), terminal_safe(r.save_error).c_str(), code,
                 static_cast<unsigned long long>(r.received_lookups));
    return code != 0 ? code : 1;
  }
  if (!r.placed) {
    // The recording is whole but not at -o (the recorder said where, in one line): a runtime
    // failure, unless the job itself failed, whose code comes first.
    return code != 0 ? code : 1;
  }
  if (r.final_save_failed) {
    // Documented: a recording that could not be saved whole is a runtime failure (exit 1),
    // unless the job itself failed, whose code comes first.
    // What it holds, measured, not the time since the last save (which read "up to 4.2 s" of a
    // file that held nothing): the job's seconds and the lookups it kept of those received.
    std::fprintf(stderr,
                 "edo record: %s is incomplete (%s): it holds the first %.1f s of the job's %.1f s and %llu of the %llu "
                 "lookups edo received (edo report says so too)\n",
                 terminal_safe(out).c_str(), terminal_safe(r.save_error).c_str(), r.saved_s, r.job_s,
                 static_cast<unsigned long long>(r.saved_lookups), static_cast<unsigned long long>(r.received_lookups));
    return code != 0 ? code : 1;
  }
  std::fprintf(stderr, "edo record: wrote %s\n", terminal_safe(out).c_str());
  for (auto& line : collector::summary_lines(recorder.profile(), o.weights))
    std::fprintf(stderr, "  %s\n", terminal_safe(line).c_str());
  say_unsent_files(unsent, started);
  return code;
}

int run_record(const RecordOptions& o) {
  if (o.command.empty()) throw UsageError("missing the command to run (edo record [options] -- CMD ARGS...)");
  const TraceLibrary trace = find_trace_library();
  int err = 0;
  const std::string exe = resolve_command(o.command[0], err);
  if (err) {
    std::fprintf(stderr, "edo record: %s: %s\n", terminal_safe(o.command[0]).c_str(), err == 127 ? "command not found" : "permission denied");
    return err;
  }
  // The tracer is 64-bit only: a 32-bit program's loader refuses it (and says "wrong ELF class"
  // on the job's stderr). The job still runs, unchanged, as without edo (64-bit programs it
  // starts are traced); said here once, and at the end instead of a guess at the cause.
  std::string untraced_reason;
  if (const std::string p32 = thirty_two_bit_program(exe); !p32.empty()) {
    untraced_reason = terminal_safe(p32) + " is a 32-bit program and libedo_trace.so is 64-bit only: the job runs untraced " +
                      "(the loader's \"wrong ELF class: ELFCLASS64\" line about libedo_trace.so is that); record a 64-bit " +
                      "build of it";
    std::fprintf(stderr, "edo record: %s\n", untraced_reason.c_str());
  }
  std::string prog = o.command[0];
  if (auto s = prog.rfind('/'); s != std::string::npos) prog = prog.substr(s + 1);
  const std::string out = o.output.empty() ? unused_output_name("edo." + prog + "." + std::to_string(getpid())) : o.output;
  check_output_path(out, o.force);  // before the job starts: nothing of the user's is replaced
  std::string plan;
  if (const int rc = check_apply_plan(o, plan)) return rc;
  // Where a traced process keeps what it could not send once edo is gone (killed, crashed, or
  // ended before the process): <output>.unsent.<pid>, absolute, since the job may change its
  // directory (docs/losses.md).
  const std::string unsent = unsent_prefix(out);
  // (A second early: file times come from a coarser clock.)
  const auto started = std::filesystem::file_time_type::clock::now() - std::chrono::seconds(1);
  const std::vector<std::string> env = job_environment(o, trace, unsent, plan);

  collector::RecordSettings settings;
  settings.output = out;
  settings.replace_existing = o.force;
  settings.untraced_reason = untraced_reason;
  settings.job = {exe, o.command, env, "EDO_ROOT_PID", {}};
  settings.metadata["edo_version"] = EDO_VERSION;
  settings.metadata["recorded_command"] = [&] {
    std::string c;
    for (auto& a : o.command) c += (c.empty() ? "" : " ") + a;
    return c;
  }();
  collector::ProcessLauncher launcher;
  collector::Recorder recorder(launcher, [](const std::string& line) {
    std::fprintf(stderr, "edo record: %s\n", terminal_safe(line).c_str());
  });
  const collector::RecordOutcome r = recorder.run(settings);  // throws with a one-line message
  return say_outcome(r, recorder, o, out, unsent, started);
}

// CLI11 2.1 mangles a trailing command line (flags of the job, a second "--"); once it has
// accepted the arguments, the job's command is taken verbatim from the raw argv instead.
std::vector<std::string> raw_command() {
  std::vector<std::string> args;
  FILE* f = std::fopen("/proc/self/cmdline", "rb");
  if (!f) return args;
  std::string cur;
  int c;
  while ((c = std::fgetc(f)) != EOF) {
    if (c == '\0') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(char(c));
    }
  }
  std::fclose(f);
  size_t i = 1;
  while (i < args.size() && args[i] != "record") ++i;
  ++i;
  while (i < args.size()) {
    const std::string& a = args[i];
    if (a == "--") return {args.begin() + long(i) + 1, args.end()};
    if (a == "-o" || a == "--output" || a == "--exact-rows" || a == "--flush-ms" || a == "--weight-rows" ||
        a == "--apply-plan") {
      i += 2;
      continue;
    }
    if (a == "--force") {
      ++i;
      continue;
    }
    if (a.rfind("--output=", 0) == 0 || a.rfind("--exact-rows=", 0) == 0 || a.rfind("--flush-ms=", 0) == 0 ||
        a.rfind("--weight-rows=", 0) == 0 || a.rfind("--apply-plan=", 0) == 0 || a == "--weights" || (a.rfind("-o", 0) == 0 && a.size() > 2)) {
      ++i;
      continue;
    }
    break;
  }
  return {args.begin() + long(std::min(i, args.size())), args.end()};
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<RecordOptions>();
  sub.add_option("-o,--output", o->output, "the .edodb to write (default edo.<program>.<pid>.edodb, never an existing file)");
  sub.add_flag("--force", o->force, "replace the -o file if it is an edo database (other files are never replaced)");
  // The ranges libedo_trace.so accepts (profiler/capture/src/config/config.cpp): a value outside them
  // is a usage error here, not a warning from every traced process later.
  sub.add_option("--exact-rows", o->exact_rows, "exact per-row counts up to this many rows (EDO_EXACT_ROWS)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  sub.add_option("--flush-ms", o->flush_ms, "flush interval of the traced processes in ms (EDO_FLUSH_MS)")
      ->check(CLI::Range(uint64_t{10}, uint64_t{3600000}));
  sub.add_flag("--weights", o->weights,
               "keep a weight snapshot per table (hottest rows + a uniform sample) so that 'edo tune' computes errors on "
               "the job's own weights (EDO_WEIGHTS=1; PyTorch: taken when a table's module is released and at exit; "
               "C/C++: edo_table_weights())");
  sub.add_option("--weight-rows", o->weight_rows, "rows a weight snapshot keeps per table (EDO_WEIGHT_ROWS, default 65536)")
      ->check(CLI::Range(uint64_t{16}, uint64_t{1} << 24));
  sub.add_option("--apply-plan", o->apply_plan,
                 "a trial run of a plan with no code change: the PyTorch hooks apply PLAN (edo export's JSON/YAML, or an "
                 ".edodb that 'edo tune' wrote to) to the job's model at its first forward, before any optimizer step "
                 "(fp16/bf16 training tables keep fp32 optimizer state, updated with stochastic rounding), and record "
                 "the converted tables under the same names; then 'edo diff --plan PLAN this.edodb' (EDO_APPLY_PLAN)")
      ->type_name("PLAN");
  sub.add_option("command", o->command, "the job to run and its arguments (after --)")->required();
  sub.prefix_command();
  sub.footer(variables_help());
  return [o] {
    RecordOptions opts = *o;
    std::vector<std::string> raw = raw_command();
    if (!raw.empty()) opts.command = raw;
    return run_record(opts);
  };
}

}  // namespace

EDO_REGISTER_COMMAND("record", "run a job with the tracer attached and write an .edodb", 10, setup);

}  // namespace edo::cli::record_command
