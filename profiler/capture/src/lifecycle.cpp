// The process lifecycle of the preload library: load (constructor), the background thread
// (drain, poll, flush every EDO_FLUSH_MS), exit, exec and self-inflicted signals (hooks.cpp),
// fork.
//
// Lock order (never take an earlier lock while holding a later one):
//   bg_work_mu -> flush_mu -> drain_mu -> registry -> counts -> queue -> events -> kernels -> ranges -> sink
// (weights.cpp's ws->mu comes after counts and before events; CUPTI's attach lock,
// cupti_state.h, after bg_work_mu and before start_mu: attaching notes and logs)
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "flush.h"
#include "job_env.h"
#include "process.h"
#include "cuda_side.h"
#include "events.h"
#include "lifecycle.h"
#include "tracer_log.h"
#include "weights.h"
#include "tracer_config.h"

namespace edo::capture {
namespace {

// ---- flush ---------------------------------------------------------------------------------
// `reply`: the collector asked for this flush (sink.h) and waits for the reply note.
// `deadline_ns` (monotonic, 0: none): a process about to die by a signal waits for this flush a
// bounded time; host batches not counted by then are dropped and counted instead.
void flush_session(bool final_goodbye, wire::EndReason reason, int code, bool reply = false, int64_t deadline_ns = 0) {
  Process& p = *process();
  Session& s = session();
  std::lock_guard<std::mutex> flk(s.flush_mu);
  if (s.goodbye_sent && final_goodbye) return;
  // A fatal signal's flush must end in time: it counts until its deadline and drops the rest
  // (counted). Any other flush stops counting as soon as such a flush is asked for and leaves
  // the rest queued for it.
  std::function<bool()> late;
  if (deadline_ns) late = [deadline_ns] { return now_ns() > deadline_ns; };
  else late = [&s] { return s.sig_req.load() != s.sig_done.load(); };
  s.drain(p.registry, late, deadline_ns != 0);
  cuda_poll(final_goodbye);
  cuda_collect(final_goodbye);
  s.drain(p.registry, late, deadline_ns != 0);
  if (!s.open && !s.anything_to_say(p.registry.size())) return;
  const RegistryCursor sent_before = s.sent;
  const uint64_t steps_before = s.steps_sent;
  const bool was_open = s.open;
  FlushSnapshot snap = take_snapshot(s, p.registry, p.cfg.window_steps == 0);
  if (p.cfg.weights) {
    for (const auto& d : snap.deltas) weights_note_delta(d);
    snap.weight_frames = weights_take_frames();
  }
  if (!s.open) {
    snap.hello = make_hello(p.cfg, p.async.load(), s.id);
    s.open = true;
    s.said_hello.store(true);
  }
  if (reply) snap.notes.push_back({wire::kFlushReplyNote, ""});
  if (final_goodbye) {
    snap.goodbye = wire::Goodbye{now_ns() - s.id.start_mono_ns, reason, code};
    s.goodbye_sent = true;
  }
  const bool only_drops = snap.only_drop_counters();
  const uint64_t lookups = snap.lookups;
  const bool had_kernels = snap.kernels.has_value(), had_ranges = snap.ranges.has_value();
  const std::string frames = encode_flush(std::move(snap));
  // A new stream (the unsent file, once the collector went away: sink.h) gets, before these
  // frames, what the session said before them (its Hello, the tables and ties sent so far,
  // the steps), and after them the absolute totals as they are now (kernels, ranges, every
  // drop counter, with collector_lost), so that the file is a trace of its own: `edo import`
  // makes a database of what the collector did not get. These frames themselves go there
  // too, so that nothing is lost when the collector dies between two flushes.
  const Sink::Resay resay = [&](bool spill) {
    std::pair<std::string, std::string> around;
    if (was_open) {
      FlushSnapshot before;
      before.hello = make_hello(p.cfg, p.async.load(), s.id);
      p.registry.take_sent(sent_before, before.tables, before.extras, before.ties);
      if (steps_before) before.steps = steps_before;
      around.first = encode_flush(std::move(before));
    }
    if (spill) s.events.count_drop("collector_lost", 1);
    FlushSnapshot after;
    s.kernels.mark_dirty();
    after.kernels = s.kernels.take_if_dirty();
    s.ranges.mark_dirty();
    after.ranges = s.ranges.take_if_dirty();
    s.events.take_drops(after.dropped);
    if (after.kernels && after.kernels->empty()) after.kernels.reset();
    if (after.ranges && after.ranges->empty()) after.ranges.reset();
    around.second = encode_flush(std::move(after));
    return around;
  };
  const uint64_t kept_before = s.sink.kept_writes();
  const bool written = s.sink.write(frames, resay);
  if (written && s.sink.kept_writes() != kept_before) s.kept_lookups += lookups;
  if (!written && !only_drops) {
    // What the next flush can say again is said again: the Hello, the registry, steps and the
    // kernel and range totals (absolute). The counts of this flush are lost: counted, and sent
    // with the next flush that gets through (a file after the disk got space again), or
    // reported at exit when none does (report_undelivered()).
    s.open = was_open;
    s.sent = sent_before;
    s.steps_sent = steps_before;
    if (had_kernels) s.kernels.mark_dirty();
    if (had_ranges) s.ranges.mark_dirty();
    s.events.count_drop("unsent_flushes", 1);
    s.events.count_drop("unsent_bytes", frames.size());
    if (lookups) s.events.count_drop("unsent_lookups", lookups);
    s.unsent_lookups += lookups;
  }
}

// One line on stderr when part of this process's trace never reached the collector or the
// file: then no database can show it (the collector is gone, or the counters never got
// through), and the user must still learn that the recording is incomplete. And one line when
// part of it went to the unsent file instead of the collector: where it is, and how to read it.
void report_undelivered() {
  Session& s = session();
  if (s.loss_reported) return;
  const uint64_t kept = s.sink.kept_writes();
  if (kept) {
    const std::string path = s.sink.spill_path();
    tracer_log(s.sink.gone_reason() + ": " + std::to_string(kept) + " flush(es) of this process's trace (" +
               std::to_string(s.sink.kept_bytes()) + " bytes, " + std::to_string(s.kept_lookups) +
               " lookups) are kept in " + path + " (edo import " + path + ")");
  }
  const uint64_t n = s.sink.lost_writes();
  if (n) {
    tracer_log(std::to_string(n) + " flush(es) of this process's trace (" + std::to_string(s.sink.lost_bytes()) +
               " bytes, " + std::to_string(s.unsent_lookups) + " lookups) were not delivered: " + s.sink.lost_reason() +
               "; the recording misses them");
  }
  if (kept || n) s.loss_reported = true;
}

// The EDO_OUTPUT file this process owns (it started it afresh as the run's first process, or is
// that process after an exec): a process that recorded nothing would leave it empty, a 0-byte
// "trace" (issue 30 §11). At exit it is removed while it is still that file and empty and the
// process never tried to write to it; nothing else is ever removed (the job's forked children
// write <path>.<pid> and own none).
struct OwnedOutput {
  std::string path;
  pid_t owner = 0;
  dev_t dev = 0;
  ino_t ino = 0;
};
// Never destroyed: read by the exit handlers, which run after the library's static objects are
// gone (they were registered before them).
OwnedOutput& owned_output() {
  static OwnedOutput* o = new OwnedOutput;
  return *o;
}

void note_owned_output(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return;
  owned_output() = {path, getpid(), st.st_dev, st.st_ino};
}

void remove_empty_output() {
  const OwnedOutput& o = owned_output();
  if (o.path.empty() || o.owner != getpid()) return;
  // Only when this process had nothing to say: an empty file whose writes failed (a file size
  // limit) is the trace of a loss, kept as the process's line at exit says.
  const Session& s = session();
  if (s.said_hello.load() || s.sink.lost_writes() != 0) return;
  struct stat st{};
  if (::stat(o.path.c_str(), &st) == 0 && st.st_dev == o.dev && st.st_ino == o.ino && S_ISREG(st.st_mode) && st.st_size == 0)
    ::unlink(o.path.c_str());
}

// ---- background thread ---------------------------------------------------------------------
void bg_main(Session* s) {
  s->bg_entered.store(true);  // thread start-up (allocations included) is over: see ensure_background_thread()
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  const Process& p = *process();
  const auto period = std::chrono::milliseconds(p.cfg.flush_ms);
  auto next_flush = std::chrono::steady_clock::now() + period;
  while (true) {
    const auto until = std::min(next_flush, std::chrono::steady_clock::now() + std::chrono::milliseconds(20));
    if (s->queue.wait_until(until)) break;
    std::lock_guard<std::mutex> work(s->bg_work_mu);
    // A backlog of batches must not hold up a fatal signal's flush: stop and leave the rest
    // queued for it.
    s->drain(p.registry, [s] { return s->sig_req.load() != s->sig_done.load(); });
    cuda_poll(false);
    cupti_poll();
    const uint64_t sreq = s->sig_req.load();
    const bool sig = sreq != s->sig_done.load();
    const bool asked = s->sink.flush_requested();
    // A session's first flush goes out as soon as it has something to say, not a period
    // later: the collector then knows the process (it can ask it for a flush before passing
    // a signal on) and a process killed early keeps what it had.
    const bool first = !s->said_hello.load() && s->anything_to_say(p.registry.size());
    if (sig || asked || first || std::chrono::steady_clock::now() >= next_flush) {
      const int fin = sig ? s->sig_final.load() : 0;
      cupti_flush();
      // Half of the caller's wait for counting, the rest for encoding and writing.
      if (fin)
        flush_session(true, wire::EndReason::kSignal, fin, asked,
                      s->sig_req_ns.load() + int64_t(kFatalSignalFlushWaitMs) * 500000);
      else flush_session(false, wire::EndReason::kExit, 0, asked);
      if (sig) s->sig_done.store(sreq);
      next_flush = std::chrono::steady_clock::now() + period;
    }
  }
  s->bg_running.store(false);
}

void stop_bg() {
  Session& s = session();
  if (!s.bg || !s.bg_running.load()) return;
  s.queue.request_stop();
  if (s.bg->joinable() && s.bg->get_id() != std::this_thread::get_id()) s.bg->join();
  s.bg_running.store(false);
}

// ---- exit and signals ----------------------------------------------------------------------
// Termination signals are held back while a final flush runs on the calling thread (exit,
// _exit, exec): a SIGTERM arriving then (multiprocessing's Pool.terminate() races the
// workers' own os._exit) would otherwise kill the process mid-write. Restored afterwards,
// so a pending signal is still delivered and the process still dies by it.
struct HoldSignals {
  sigset_t old;
  HoldSignals() {
    sigset_t s;
    sigemptyset(&s);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&s, sig);
    pthread_sigmask(SIG_BLOCK, &s, &old);
  }
  ~HoldSignals() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
};

void on_exit_handler() {
  Process* p = process();
  if (!p || !p->active) return;
  Session& s = session();
  if (s.exited.exchange(true)) return;
  if (s.id.pid != getpid()) return;
  HoldSignals hold;
  stop_bg();
  cupti_flush();
  flush_session(true, wire::EndReason::kExit, 0);
  report_undelivered();
  remove_empty_output();
}

// ---- fork ------------------------------------------------------------------------------------
// The parent waits for the background thread to finish its round of work and keeps the
// process-wide state (registry, NVTX handles, NVTX strings and domains, weight history)
// consistent while the child copies it. The child
// then gets a new Session: the parent's session (its pending counts, events, sink, thread)
// stays behind, untouched and unused.
void atfork_prepare() {
  Process* p = process();
  if (!p || !p->active) return;
  Session& s = session();
  s.bg_work_mu.lock();  // first: the background thread takes the others while holding it
  cuda_before_fork();   // CUPTI's attach lock: the background thread takes it in its round
  s.start_mu.lock();
  p->registry.mutex().lock();
  p->range_handles.mutex().lock();
  p->nvtx_names.mutex().lock();
  p->weights.mu.lock();
}

void atfork_parent() {
  Process* p = process();
  if (!p || !p->active) return;
  Session& s = session();
  p->weights.mu.unlock();
  p->nvtx_names.mutex().unlock();
  p->range_handles.mutex().unlock();
  p->registry.mutex().unlock();
  s.start_mu.unlock();
  cuda_after_fork_parent();
  s.bg_work_mu.unlock();
}

void atfork_child() {
  Process* p = process();
  if (!p || !p->active) return;
  p->weights.mu.unlock();
  p->nvtx_names.mutex().unlock();
  p->range_handles.mutex().unlock();
  p->registry.mutex().unlock();
  // The old session is left as the fork copied it (its locks may be held by threads that do
  // not exist here; its background thread is gone); only its inherited sink is closed.
  session().sink.close_inherited();
  // What a child keeps and what it replaces (process.h): Process as copied (its locks were
  // held across the fork, released above), a new Session (weight frames included), and the
  // CUDA side marked dead.
  replace_session(p->new_session(/*quiet=*/true));
  cuda_after_fork_child();
}

// This library's absolute path ("" when unknown).
std::string own_path() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&own_path), &info) || !info.dli_fname) return {};
  char buf[PATH_MAX];
  return realpath(info.dli_fname, buf) ? std::string(buf) : std::string();
}

__attribute__((constructor(101))) void edo_trace_init() {
  if (process()) return;
  std::vector<std::string> warnings;
  Config cfg = parse_config([](const char* n) { return getenv(n); }, &warnings);
  // The run's first traced process makes the run id; its children (forked or exec'ed) inherit
  // it through the environment, so that every trace file of one run says which run it is.
  const bool new_run = cfg.run_id.empty();
  if (new_run) cfg.run_id = new_run_id();
  auto* p = new Process(cfg);
  install_process(p, p->new_session(/*quiet=*/false));
  if (p->active) set_up_job_environment(own_path(), &warnings);
  if (p->active && new_run) setenv("EDO_RUN_ID", cfg.run_id.c_str(), 1);
  const bool root = cfg.root_pid == 0 || cfg.root_pid == getpid();
  if (p->active && root)
    for (auto& w : warnings) tracer_log(w);
  if (!p->active) return;
  if (!cfg.output.empty() && cfg.output_owner == 0) {
    // The first process of an EDO_OUTPUT run owns the file; start it afresh.
    int fd = ::open(cfg.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
    setenv("EDO_OUTPUT_OWNER", std::to_string(getpid()).c_str(), 1);
  }
  if (!cfg.output.empty() && (cfg.output_owner == 0 || cfg.output_owner == getpid())) note_owned_output(cfg.output);
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  atexit(on_exit_handler);
  // No signal handler is installed: the job's handlers and dispositions stay exactly as they
  // would be without edo (Python's KeyboardInterrupt, a job's own SIGTERM handler). A process
  // that kills itself goes through the kill()/raise() wrappers (hooks.cpp), one killed from
  // outside keeps what its last periodic flush sent.
  ensure_background_thread();
  if (cfg.cuda) cupti_start();
  // Sessions open lazily (first table, lookup, step, NVTX range or GPU allocation), so that
  // the shells, launchers and compilers a job runs leave no empty rows; `edo record` adds a
  // row for the job's first process if it never reported (it carries the exit code).
}

__attribute__((destructor)) void edo_trace_fini() { on_exit_handler(); }

}  // namespace

void ensure_initialized() {
  if (!process()) edo_trace_init();
}

void ensure_background_thread() {
  Session& s = session();
  if (!s.need_start.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lk(s.start_mu);
  if (!s.need_start.load()) return;
  try {
    s.bg_entered.store(false);
    s.bg = new std::thread(bg_main, &s);
    s.bg_running.store(true);
    // Wait (2 s at most) until the thread runs our code: a fork() while the new thread is
    // still being set up could copy an allocator lock in the taken state (see bg_work_mu).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!s.bg_entered.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  } catch (...) {
    process()->async.store(false);  // no thread: ingest inline, flush at exit only
  }
  s.need_start.store(false);
}

void flush_now(bool final_goodbye, int reason, int code) {
  if (!tracer_active() || session().id.pid != getpid()) return;
  HoldSignals hold;
  Session& s = session();
  if (final_goodbye) {
    stop_bg();
    s.exited.store(true);
    s.need_start.store(false);
  }
  cupti_flush();
  flush_session(final_goodbye, static_cast<wire::EndReason>(reason), code);
  if (final_goodbye) report_undelivered();
  if (final_goodbye && reason == 0) remove_empty_output();  // _exit (an exec keeps it for the new image)
}

void flush_before_fatal_signal(int sig) {
  const int saved_errno = errno;
  Process* p = process();
  if (p && p->active) {
    Session& s = session();
    if (s.id.pid == getpid() && s.bg_running.load() && !s.exited.load()) {
      s.sig_final.store(sig);
      timespec start{}, now{};
      clock_gettime(CLOCK_MONOTONIC, &start);
      s.sig_req_ns.store(int64_t(start.tv_sec) * 1000000000 + start.tv_nsec);
      const uint64_t want = s.sig_req.fetch_add(1) + 1;
      while (s.sig_done.load() < want) {
        timespec ms{0, 1000000};
        nanosleep(&ms, nullptr);
        clock_gettime(CLOCK_MONOTONIC, &now);
        const int64_t waited_ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (waited_ms >= kFatalSignalFlushWaitMs) break;
      }
    }
  }
  errno = saved_errno;
}

void resume_after_failed_exec() {
  if (!tracer_active() || session().id.pid != getpid()) return;
  Session& s = session();
  std::lock_guard<std::mutex> flk(s.flush_mu);
  s.goodbye_sent = false;
  s.exited.store(false);
  s.need_start.store(true);
  s.queue.clear_stop();
}

}  // namespace edo::capture
