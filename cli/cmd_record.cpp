// `edo record`: run a job with libedo_trace.so preloaded, collect the frames of every process
// that loads it (one session each) over a Unix socket, and keep the .edodb up to date while
// the job runs (saved every ~2 s and at the end, so a killed job leaves what was flushed).
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "command.h"
#include "config.h"
#include "edo/collector/collector.h"
#include "edo/db/profile_store.h"
#include "edo/model/processes.h"
#include "support/output_file.h"
#include "support/terminal.h"
#include "support/trace_library.h"
#include "version.h"

extern char** environ;

namespace edo::cli {
namespace {

struct RecordOptions {
  std::string output;
  bool force = false;
  uint64_t exact_rows = 0;
  uint64_t flush_ms = 0;
  bool weights = false;        // --weights: EDO_WEIGHTS=1 (weight snapshots for the tuner)
  uint64_t weight_rows = 0;    // --weight-rows: EDO_WEIGHT_ROWS
  std::vector<std::string> command;
};

std::atomic<int> g_pending_signal{0};

void forward_signal(int sig, siginfo_t* info, void*) {
  // Terminal-generated signals (SI_KERNEL) already reach the job: same process group.
  if (info && info->si_code == SI_KERNEL) return;
  // Passed on by the collecting loop once the traced processes have flushed (the tracer
  // installs no signal handler, so a job that dies by the signal cannot flush itself).
  g_pending_signal.store(sig);
}

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
      "the database could not be saved whole (a full disk mid-recording: one line says so, the job runs on).\n\n"
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
  if (!internal.empty()) s += "\nSet by edo record for its own use (do not set them): " + internal + ".\n";
  return s;
}

int run_record(const RecordOptions& o) {
  if (o.command.empty()) throw UsageError("missing the command to run (edo record [options] -- CMD ARGS...)");
  const TraceLibrary trace = find_trace_library();
  const std::string& lib = trace.lib;
  int err = 0;
  const std::string exe = resolve_command(o.command[0], err);
  if (err) {
    std::fprintf(stderr, "edo record: %s: %s\n", terminal_safe(o.command[0]).c_str(), err == 127 ? "command not found" : "permission denied");
    return err;
  }
  std::string prog = o.command[0];
  if (auto s = prog.rfind('/'); s != std::string::npos) prog = prog.substr(s + 1);
  const std::string out = o.output.empty() ? unused_output_name("edo." + prog + "." + std::to_string(getpid())) : o.output;
  check_output_path(out, o.force);  // before the job starts: nothing of the user's is replaced

  collector::ChannelServer server;  // throws with a one-line message
  db::ProfileStore store(out, db::ProfileStore::Mode::kCreate);
  collector::ProfileBuilder builder("record");
  builder.profile().metadata["edo_version"] = EDO_VERSION;
  builder.profile().metadata["recorded_command"] = [&] {
    std::string c;
    for (auto& a : o.command) c += (c.empty() ? "" : " ") + a;
    return c;
  }();

  // ---- the job's environment ----
  std::vector<std::string> env;
  auto getv = [](const char* n) -> std::string { const char* v = getenv(n); return v ? v : ""; };
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string k = kv.substr(0, kv.find('='));
    if (k == "LD_PRELOAD" || k == "NVTX_INJECTION64_PATH" || k == "EDO_CHANNEL" || k == "EDO_OUTPUT" ||
        k == "EDO_OUTPUT_OWNER" || k == "EDO_ROOT_PID" || k == "EDO_TRACE_LIB" || k == "PYTHONPATH" ||
        (k == "EDO_EXACT_ROWS" && o.exact_rows) || (k == "EDO_FLUSH_MS" && o.flush_ms) ||
        (k == "EDO_WEIGHTS" && o.weights) || (k == "EDO_WEIGHT_ROWS" && o.weight_rows))
      continue;
    env.push_back(kv);
  }
  const std::string old_preload = getv("LD_PRELOAD");
  std::string preload = lib + (old_preload.empty() ? "" : ":" + old_preload);
#ifdef EDO_SANITIZER_PRELOAD
  // Sanitizer builds only: the instrumented library needs its runtime loaded first, and the
  // job's own leaks are not ours to report.
  if (std::string(EDO_SANITIZER_PRELOAD).size() > 0) {
    preload = std::string(EDO_SANITIZER_PRELOAD) + ":" + preload;
    if (getv("ASAN_OPTIONS").empty()) env.push_back("ASAN_OPTIONS=detect_leaks=0");
  }
#endif
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
  env.push_back("EDO_CHANNEL=" + server.path());
  env.push_back("EDO_TRACE_LIB=" + lib);
  if (o.exact_rows) env.push_back("EDO_EXACT_ROWS=" + std::to_string(o.exact_rows));
  if (o.flush_ms) env.push_back("EDO_FLUSH_MS=" + std::to_string(o.flush_ms));
  if (o.weights) env.push_back("EDO_WEIGHTS=1");
  if (o.weight_rows) env.push_back("EDO_WEIGHT_ROWS=" + std::to_string(o.weight_rows));
  std::string pythonpath = getv("PYTHONPATH");
  if (getv("EDO_TORCH") != "0") {
    std::string add;
    if (!trace.boot.empty()) add = trace.boot;
    if (!trace.python.empty()) add += (add.empty() ? "" : ":") + trace.python;
    if (!add.empty()) pythonpath = add + (pythonpath.empty() ? "" : ":" + pythonpath);
  }
  if (!pythonpath.empty()) env.push_back("PYTHONPATH=" + pythonpath);

  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_s = o.command;
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  // ---- signals: forward to the job ----
  struct sigaction sa{};
  sa.sa_sigaction = forward_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int{}, old_term{}, old_hup{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);
  signal(SIGPIPE, SIG_IGN);
  // Past the file size limit (ulimit -f) a write fails with EFBIG and raises SIGXFSZ, whose
  // default action would kill the collector and lose the recording: take the error instead.
  signal(SIGXFSZ, SIG_IGN);

  std::fflush(nullptr);
  const int64_t job_start_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch()).count();
  const auto job_start = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child < 0) throw Failure(std::string("cannot fork: ") + std::strerror(errno));
  if (child == 0) {
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    sigaction(SIGPIPE, &dfl, nullptr);
    sigaction(SIGXFSZ, &dfl, nullptr);
    std::string root = "EDO_ROOT_PID=" + std::to_string(getpid());
    envp.insert(envp.end() - 1, root.data());
    execve(exe.c_str(), argv.data(), envp.data());
    std::fprintf(stderr, "edo record: cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  // Which process is the job: the report's header shows it, not the first process to connect.
  builder.profile().metadata[model::kJobRootPid] = std::to_string(child);

  // ---- collect ----
  using clock = std::chrono::steady_clock;
  auto last_save = clock::now();
  uint64_t saved_gen = 0;
  // A save that fails (disk full, file size limit, ...) never stops the job: one line says so
  // the first time, later saves keep trying, and the closing line says what the file holds.
  bool save_failed = false, final_save_failed = false;
  auto last_good_save = clock::now();
  auto save = [&](bool final_save) {
    if (!final_save && builder.generation() == saved_gen) return;
    try {
      store.save(builder.finish(), final_save);
      saved_gen = builder.generation();
      last_good_save = clock::now();
    } catch (const std::exception& e) {
      if (!save_failed)
        std::fprintf(stderr, "edo record: %s; the job runs on, the file keeps what was saved before, and edo retries every 2 s\n",
                     terminal_safe(e.what()).c_str());
      save_failed = true;
      final_save_failed = final_save;
    }
  };
  // A signal for the job: ask every traced process for a flush, wait for the replies (1 s at
  // most), then pass the signal on.
  auto pass_on = [&](int sig) {
    server.accept_pending(builder);
    const uint64_t before = builder.flush_replies();
    const size_t asked = server.request_flush();
    const auto give_up = clock::now() + std::chrono::seconds(1);
    while (builder.flush_replies() - before < asked && clock::now() < give_up) server.poll_once(builder, 20);
    kill(child, sig);
  };
  int status = 0;
  bool exited = false;
  auto exit_time = clock::now();
  auto last_activity = clock::now();
  while (true) {
    if (server.poll_once(builder, 100)) last_activity = clock::now();
    if (const int sig = g_pending_signal.exchange(0); sig && !exited) pass_on(sig);
    if (!exited) {
      pid_t r = waitpid(child, &status, WNOHANG);
      if (r == child) {
        exited = true;
        exit_time = clock::now();
        // The job's last process often connects only in its exit handler: its connection may
        // still wait in the backlog, with all its frames in it. Take it before closing.
        server.accept_pending(builder);
        server.stop_listening();
      }
    }
    if (exited) {
      // Drain: connections close when their processes end; grandchildren that outlive the
      // job get a short grace period.
      if (server.connections() == 0) break;
      if (clock::now() - last_activity > std::chrono::seconds(2) && clock::now() - exit_time > std::chrono::seconds(2)) break;
    }
    if (clock::now() - last_save > std::chrono::seconds(2)) {
      save(false);
      last_save = clock::now();
    }
  }
  while (server.poll_once(builder, 0)) {
  }
  builder.close_all_streams();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);

  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  bool have_root = false;
  const bool nothing = builder.profile().sessions.empty();
  for (auto& s : builder.profile().sessions) have_root |= s.pid == child;
  if (!have_root) {
    // The job's first process reported nothing itself (a launcher or shell script whose
    // children did the work), or nothing was traced at all: give it a row for its exit code.
    model::Session s;
    int64_t max_id = 0;
    for (auto& x : builder.profile().sessions) max_id = std::max(max_id, x.id);
    s.id = max_id + 1;
    s.command = builder.profile().metadata["recorded_command"];
    s.pid = child;
    s.parent_pid = getpid();
    s.source = "record";
    s.start_unix_ns = job_start_unix_ns;
    s.duration_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(exit_time - job_start).count();
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    s.host = host;
    builder.profile().sessions.insert(builder.profile().sessions.begin(), s);
    if (nothing)
      std::fprintf(stderr,
                   "edo record: no traced process reported anything (no table registered, no NVTX range, no GPU "
                   "allocation; or the job does not load libedo_trace.so: statically linked, LD_PRELOAD cleared)\n");
  }
  builder.set_exit_code(child, code);
  builder.profile().metadata[model::kJobDurationNs] =
      std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(exit_time - job_start).count());
  for (auto& is : builder.issues())
    std::fprintf(stderr, "edo record: %s, byte %llu: %s\n", terminal_safe(is.stream).c_str(),
                 static_cast<unsigned long long>(is.offset), terminal_safe(is.message).c_str());
  save(true);
  if (final_save_failed) {
    // Documented: a recording that could not be saved whole is a runtime failure (exit 1),
    // unless the job itself failed, whose code comes first.
    const double lost_s = std::chrono::duration<double>(clock::now() - last_good_save).count();
    std::fprintf(stderr, "edo record: %s is incomplete: it holds the recording up to %.1f s before the end (the last save that worked)\n",
                 terminal_safe(out).c_str(), lost_s);
    return code != 0 ? code : 1;
  }
  std::fprintf(stderr, "edo record: wrote %s\n", terminal_safe(out).c_str());
  for (auto& line : collector::summary_lines(builder.profile(), o.weights))
    std::fprintf(stderr, "  %s\n", terminal_safe(line).c_str());
  return code;
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
    if (a == "-o" || a == "--output" || a == "--exact-rows" || a == "--flush-ms" || a == "--weight-rows") {
      i += 2;
      continue;
    }
    if (a == "--force") {
      ++i;
      continue;
    }
    if (a.rfind("--output=", 0) == 0 || a.rfind("--exact-rows=", 0) == 0 || a.rfind("--flush-ms=", 0) == 0 ||
        a.rfind("--weight-rows=", 0) == 0 || a == "--weights" || (a.rfind("-o", 0) == 0 && a.size() > 2)) {
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
  // The ranges libedo_trace.so accepts (profiler/capture/src/config.cpp): a value outside them
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

}  // namespace edo::cli
