// Recorder::run: moved from cli/cmd_record.cpp's run_record (issue 18 §8); what it does is
// unchanged but for the signals (job_launcher.h, issue 18 §1) and the flush wait (issue 24).
#include "edo/collector/recorder.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "edo/db/profile_store.h"
#include "edo/db/recording_state.h"
#include "edo/model/processes.h"
#include "recording_saves.h"

namespace edo::collector {
namespace {

// Signals received for the job, one bit each, passed on by the collecting loop once the
// traced processes have flushed (the tracer installs no signal handler, so a job that dies by
// the signal cannot flush itself). The job runs in a process group of its own (ProcessLauncher),
// so no signal edo gets has reached the job: each is passed on once.
std::atomic<unsigned> g_pending_signals{0};

void on_signal(int sig) { note_signal_for_job(sig); }

std::string num(uint64_t v) { return std::to_string(v); }

// Signal dispositions for the time of a recording, restored when it ends.
class RecordingSignals {
 public:
  explicit RecordingSignals(bool forward) {
    struct sigaction sa{};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    struct sigaction ign{};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    // SIGQUIT too: the job no longer dies with edo (issue 30), so a Ctrl-backslash that
    // reaches a script's group (edo, not the job) must be passed on like a Ctrl-C.
    if (forward)
      for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) set(sig, sa);
    set(SIGPIPE, ign);
    // Past the file size limit (ulimit -f) a write fails with EFBIG and raises SIGXFSZ, whose
    // default action would kill the collector and lose the recording: take the error instead.
    set(SIGXFSZ, ign);
    // While the job's group has the terminal, edo is a background process: a line it writes
    // there (a failed save) must not stop it when the terminal has TOSTOP set.
    set(SIGTTOU, ign);
  }
  // SIGPIPE and SIGXFSZ stay ignored: the database is closed, and edo's closing lines are
  // written, after the recording (a stderr past the file size limit must not kill edo then).
  ~RecordingSignals() {
    for (auto& [sig, sa] : saved_)
      if (sig != SIGPIPE && sig != SIGXFSZ) sigaction(sig, &sa, nullptr);
  }
  // What the job starts with: what edo had before, SIGPIPE and SIGXFSZ at their defaults.
  std::vector<std::pair<int, struct sigaction>> for_the_job() const {
    std::vector<std::pair<int, struct sigaction>> v = saved_;
    for (auto& [sig, sa] : v)
      if (sig == SIGPIPE || sig == SIGXFSZ) {
        sa = {};
        sa.sa_handler = SIG_DFL;
        sigemptyset(&sa.sa_mask);
      }
    return v;
  }

 private:
  void set(int sig, const struct sigaction& sa) {
    struct sigaction old{};
    sigaction(sig, &sa, &old);
    saved_.emplace_back(sig, old);
  }
  std::vector<std::pair<int, struct sigaction>> saved_;
};

// Renames the finished recording over `output` (only an edo database, a link or nothing may be
// there; an existing one only with `replace`); returns where the recording is: `output`, or
// `recording` when it could not be placed (said in one line).
std::string place_recording(const std::string& recording, const std::string& output, bool replace,
                            const Recorder::Say& say) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto keep = [&](const std::string& why) {
    say(output + " " + why + "; the recording is kept as " + recording + " (rename it yourself)");
    return recording;
  };
  struct stat o;
  const bool exists = ::lstat(output.c_str(), &o) == 0;
  if (exists && !replace) {
    // Created while the job ran (an edo record without --force checked it was not there).
    return keep("appeared while the job ran (another edo record?) and --force was not given");
  }
  if (exists && S_ISREG(o.st_mode) && o.st_size > 0 && !db::is_edo_database(output))
    return keep("is no longer an edo database (replaced while the job ran)");
  if (exists && S_ISDIR(o.st_mode)) return keep("is a directory now");
  // The replaced file's own log must not be read with the new file.
  if (exists)
    for (const char* side : {"-wal", "-shm"}) fs::remove(output + side, ec);
  int rc;
  if (replace) {
    rc = ::rename(recording.c_str(), output.c_str());
  } else {
    rc = ::renameat2(AT_FDCWD, recording.c_str(), AT_FDCWD, output.c_str(), RENAME_NOREPLACE);
    if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) {  // a file system without it
      rc = ::link(recording.c_str(), output.c_str());
      if (rc == 0) ::unlink(recording.c_str());
    }
    if (rc != 0 && errno == EEXIST) return keep("appeared while the job ran (another edo record?) and --force was not given");
  }
  if (rc != 0) return keep(std::string("could not be written (") + std::strerror(errno) + ")");
  // A save that failed on a full disk may have left the log beside the file: it goes with it.
  if (fs::exists(recording + "-wal", ec)) fs::rename(recording + "-wal", output + "-wal", ec);
  fs::remove(recording + "-shm", ec);
  return output;
}

using clock = std::chrono::steady_clock;

// The database file and its log, journal and shared-memory files.
void remove_recording_files(const std::string& recording) {
  std::error_code ec;
  for (const char* side : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(recording + side, ec);
}

// The recording's database, created beside the output; what a failed creation left is removed
// (a full disk takes the file's first pages, not the rest: no recording), and the error names
// the output the user gave.
std::unique_ptr<db::ProfileStore> create_recording(const std::string& recording, const std::string& output) {
  try {
    return std::make_unique<db::ProfileStore>(recording, db::ProfileStore::Mode::kCreate);
  } catch (const db::DbError& e) {
    remove_recording_files(recording);
    const std::string what = e.what();
    if (what.rfind(recording, 0) != 0) throw;
    throw db::DbError(output + what.substr(recording.size()));
  }
}

// A signal for the job: ask every traced process for a flush, wait for the replies (a
// bounded time, said when it runs out), then pass the signals received so far on. A traced
// process connects when it registers its first table, reads one or counts a step (the
// tracer's sink.h), so one that has recorded anything is asked, even if its first flush is
// not out yet (issue 24: it was not, and a SIGTERM right after a registration lost it all).
void pass_signals_on(ChannelServer& server, ProfileBuilder& builder, const RecordSettings& st, JobLauncher& launcher,
                     const Recorder::Say& say) {
  server.accept_pending(builder);
  const uint64_t before = builder.flush_replies();
  const size_t asked = server.request_flush();
  const auto give_up = clock::now() + st.flush_wait;
  while (builder.flush_replies() - before < asked && clock::now() < give_up) server.poll_once(builder, 20);
  // Taken after the wait: the same signal noted again meanwhile (`timeout` sends it to the
  // pid and then to the group) is passed on once.
  const unsigned sigs = g_pending_signals.exchange(0);
  if (const uint64_t got = builder.flush_replies() - before; got < asked) {
    char wait_s[32];
    std::snprintf(wait_s, sizeof wait_s, "%g", std::chrono::duration<double>(st.flush_wait).count());
    say(num(asked - got) + " of " + num(asked) + " traced process(es) did not answer the flush request within " + wait_s +
        " s; the signal is passed on (what they recorded since their last flush is lost)");
  }
  for (int sig = 1; sig < 32; ++sig)
    if (sigs & (1u << sig)) launcher.signal(sig);
}

struct JobEnd {
  int code = 0;
  clock::time_point exit_time;
};

// Receives the traced processes' frames until the job has ended and its connections are
// drained, passing signals on and saving every st.save_every.
JobEnd collect_until_drained(ChannelServer& server, ProfileBuilder& builder, const RecordSettings& st,
                             JobLauncher& launcher, const Recorder::Say& say, RecordingSaves& saves) {
  JobEnd end;
  bool exited = false;
  auto last_save = clock::now();
  auto last_activity = clock::now();
  while (true) {
    if (server.poll_once(builder, 100)) last_activity = clock::now();
    if (g_pending_signals.load() && !exited) pass_signals_on(server, builder, st, launcher, say);
    if (!exited) {
      if (const std::optional<int> c = launcher.poll_exit()) {
        end.code = *c;
        exited = true;
        end.exit_time = clock::now();
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
      if (clock::now() - last_activity > st.drain_grace && clock::now() - end.exit_time > st.drain_grace) break;
    }
    if (clock::now() - last_save > st.save_every) {
      saves.save(false);
      last_save = clock::now();
    }
  }
  return end;
}

// Every session gets a command line, and the job's first process a session for its exit code
// even when it reported nothing itself; when no process connected at all, one line says why
// that may be.
void give_the_job_a_session(ProfileBuilder& builder, int64_t child, const std::string& untraced_reason,
                            int64_t job_start_unix_ns, int64_t job_ns, const Recorder::Say& say) {
  bool have_root = false;
  const bool nothing = builder.profile().sessions.empty();
  for (auto& s : builder.profile().sessions) {
    have_root |= s.pid == child;
    // A process that died before its first flush, gone before its command line could be read
    // (ProfileBuilder::close_stream): the job's own is known here; another's is not.
    if (s.command.empty())
      s.command = s.pid == child ? builder.profile().metadata["recorded_command"]
                                 : "(unknown: the process ended before its first flush)";
  }
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
    s.duration_ns = job_ns;
    // The node's name as the tracer gives it (EDO_HOSTNAME, which the job inherits from here).
    const char* named = getenv("EDO_HOSTNAME");
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    s.host = named && *named ? named : host;
    builder.profile().sessions.insert(builder.profile().sessions.begin(), s);
    // Only when no process ever connected: one that connected and died before its first flush
    // has a session of its own (ended_without_final_flush, ChannelServer), and was no static
    // binary.
    if (nothing && !untraced_reason.empty())
      say("no traced process reported anything: " + untraced_reason);
    else if (nothing)
      say("no traced process reported anything (no table registered, no NVTX range, no GPU allocation; or the job does "
           "not load libedo_trace.so: statically linked, LD_PRELOAD cleared)");
  }
}

}  // namespace

void note_signal_for_job(int sig) {
  if (sig > 0 && sig < 32) g_pending_signals.fetch_or(1u << sig);
}

Recorder::Recorder(JobLauncher& launcher, Say say) : launcher_(launcher), say_(std::move(say)) {}
Recorder::~Recorder() = default;

const model::Profile& Recorder::profile() const {
  static const model::Profile empty;
  return builder_ ? builder_->profile() : empty;
}

RecordOutcome Recorder::run(const RecordSettings& st) {
  // First: restored last, after the database is closed (its last write may meet the file
  // size limit, whose SIGXFSZ must not kill edo).
  RecordingSignals signals(st.install_signal_handlers);
  g_pending_signals.store(0);
  ChannelServer server;  // throws with a one-line message
  // The recording goes to a file of its own beside the output, renamed over it at the end
  // (issue 30 §4): two edo record -o with one output never write one file, the output is
  // replaced only whole, and a killed edo leaves its file where edo report finds it.
  const std::string recording = db::recording_file_for(st.output, getpid());
  std::unique_ptr<db::ProfileStore> store = create_recording(recording, st.output);
  builder_ = std::make_unique<ProfileBuilder>("record");
  ProfileBuilder& builder = *builder_;
  for (auto& [k, v] : st.metadata) builder.profile().metadata[k] = v;

  JobCommand job = st.job;
  job.env.push_back("EDO_CHANNEL=" + server.path());
  job.dispositions = signals.for_the_job();
  const int64_t job_start_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch()).count();
  const auto job_start = std::chrono::steady_clock::now();
  const int64_t child = launcher_.start(job);  // throws a one-line message
  // Which process is the job: the report's header shows it, not the first process to connect.
  builder.profile().metadata[model::kJobRootPid] = std::to_string(child);

  RecordingSaves saves(*store, recording, builder, say_, std::chrono::duration<double>(st.save_every).count(),
                       job_start_unix_ns);
  saves.first();  // from the start, the file says the recording is in progress
  const JobEnd end = collect_until_drained(server, builder, st, launcher_, say_, saves);
  const int code = end.code;
  const auto exit_time = end.exit_time;
  while (server.poll_once(builder, 0)) {
  }
  builder.close_all_streams();

  const int64_t job_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(exit_time - job_start).count();
  give_the_job_a_session(builder, child, st.untraced_reason, job_start_unix_ns, job_ns, say_);
  builder.set_exit_code(child, code);
  builder.profile().metadata[model::kJobDurationNs] = std::to_string(job_ns);
  saves.set_job_end(job_start_unix_ns + job_ns);
  for (auto& is : builder.issues()) say_(is.stream + ", byte " + num(is.offset) + ": " + is.message);
  saves.save(true);
  RecordOutcome out;
  out.code = code;
  out.final_save_failed = saves.final_save_failed();
  out.unsaved_s = std::chrono::duration<double>(clock::now() - saves.last_good_save()).count();
  out.save_error = saves.last_error();
  out.saved_lookups = saves.saved_lookups();
  out.received_lookups = saves.received_lookups();
  // The first save comes before the job starts: what the file holds of the job is never negative.
  out.saved_s = saves.saved_once() ? std::max(0.0, std::chrono::duration<double>(saves.last_good_save() - job_start).count()) : 0;
  out.job_s = std::chrono::duration<double>(exit_time - job_start).count();
  const bool saved_once = saves.saved_once();
  store.reset();  // closed: its log folded back into the file
  if (!saved_once) {
    // Not even the first save (the file's "in progress") got through: the file is an empty
    // database that would read as a whole recording of nothing. It goes; nothing is placed.
    remove_recording_files(recording);
    out.nothing_saved = true;
    return out;
  }
  out.written = place_recording(recording, st.output, st.replace_existing, say_);
  out.placed = out.written == st.output;
  return out;
}

}  // namespace edo::collector
