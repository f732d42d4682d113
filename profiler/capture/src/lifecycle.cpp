// The process lifecycle of the preload library: load (constructor), the background thread
// (drain, poll, flush every EDO_FLUSH_MS), exit, exec (hooks.cpp), fork, SIGTERM/SIGINT.
//
// Lock order (never take an earlier lock while holding a later one):
//   bg_work_mu -> flush_mu -> registry -> counts -> queue -> events -> kernels -> ranges -> sink
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "flush.h"
#include "process.h"
#include "tracer.h"
#include "tracer_config.h"

namespace edo::capture {
namespace {

// ---- flush ---------------------------------------------------------------------------------
void flush_session(bool final_goodbye, wire::EndReason reason, int code) {
  Process& p = *process();
  Session& s = session();
  std::lock_guard<std::mutex> flk(s.flush_mu);
  if (s.goodbye_sent && final_goodbye) return;
  s.drain(p.registry);
  cuda_poll(final_goodbye);
  cuda_collect(final_goodbye);
  s.drain(p.registry);
  if (!s.open && !s.anything_to_say(p.registry.size())) return;
  FlushSnapshot snap = take_snapshot(s, p.registry, p.cfg.window_steps == 0);
  if (p.cfg.weights) {
    for (const auto& d : snap.deltas) weights_note_delta(d);
    snap.weight_frames = weights_take_frames();
  }
  if (!s.open) {
    snap.hello = make_hello(p.cfg, p.async.load(), s.id);
    s.open = true;
  }
  if (final_goodbye) {
    snap.goodbye = wire::Goodbye{now_ns() - s.id.start_mono_ns, reason, code};
    s.goodbye_sent = true;
  }
  s.sink.write(encode_flush(snap));
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
    s->drain(p.registry);
    cuda_poll(false);
    cupti_poll();
    const uint64_t sreq = s->sig_req.load();
    const bool sig = sreq != s->sig_done.load();
    if (sig || std::chrono::steady_clock::now() >= next_flush) {
      const int fin = sig ? s->sig_final.load() : 0;
      cupti_flush();
      if (fin) flush_session(true, wire::EndReason::kSignal, fin);
      else flush_session(false, wire::EndReason::kExit, 0);
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
}

void on_signal(int sig, siginfo_t* info, void* uc) {
  const int saved_errno = errno;
  Process& p = *process();
  struct sigaction prev = p.prev[sig];
  const bool default_action = !(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_DFL;
  Session& s = session();
  if (p.active && s.id.pid == getpid() && s.bg_running.load()) {
    if (default_action) s.sig_final.store(sig);
    const uint64_t want = s.sig_req.fetch_add(1) + 1;
    for (int i = 0; i < 1000 && s.sig_done.load() < want; ++i) {
      timespec ts{0, 1000000};
      nanosleep(&ts, nullptr);
    }
  }
  errno = saved_errno;
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, uc);
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;
  if (prev.sa_handler == SIG_DFL) {
    // Keep the default semantics: the process dies "killed by signal".
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    raise(sig);
    return;
  }
  prev.sa_handler(sig);
}

void install_signal(int sig) {
  struct sigaction sa{};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction old{};
  if (sigaction(sig, nullptr, &old) != 0) return;
  if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) return;  // job ignores it
  process()->prev[sig] = old;
  sigaction(sig, &sa, nullptr);
}

// ---- fork ------------------------------------------------------------------------------------
// The parent waits for the background thread to finish its round of work and keeps the
// process-wide state (registry, NVTX handles) consistent while the child copies it. The child
// then gets a new Session: the parent's session (its pending counts, events, sink, thread)
// stays behind, untouched and unused.
void atfork_prepare() {
  Process* p = process();
  if (!p || !p->active) return;
  Session& s = session();
  s.bg_work_mu.lock();  // first: the background thread takes the others while holding it
  s.start_mu.lock();
  p->registry.mutex().lock();
  p->range_handles.mutex().lock();
}

void atfork_parent() {
  Process* p = process();
  if (!p || !p->active) return;
  Session& s = session();
  p->range_handles.mutex().unlock();
  p->registry.mutex().unlock();
  s.start_mu.unlock();
  s.bg_work_mu.unlock();
}

void atfork_child() {
  Process* p = process();
  if (!p || !p->active) return;
  p->range_handles.mutex().unlock();
  p->registry.mutex().unlock();
  // The old session is left as the fork copied it (its locks may be held by threads that do
  // not exist here; its background thread is gone); only its inherited sink is closed.
  session().sink.close_inherited();
  replace_session(p->new_session(/*quiet=*/true));
  cuda_after_fork_child();
  weights_after_fork_child();
}

__attribute__((constructor(101))) void edo_trace_init() {
  if (process()) return;
  std::vector<std::string> warnings;
  const Config cfg = parse_config([](const char* n) { return getenv(n); }, &warnings);
  auto* p = new Process(cfg);
  install_process(p, p->new_session(/*quiet=*/false));
  const bool root = cfg.root_pid == 0 || cfg.root_pid == getpid();
  if (p->active && root)
    for (auto& w : warnings) tracer_log(w);
  if (!p->active) return;
  if (!cfg.output.empty() && !getenv("EDO_OUTPUT_OWNER")) {
    // The first process of an EDO_OUTPUT run owns the file; start it afresh.
    int fd = ::open(cfg.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
    setenv("EDO_OUTPUT_OWNER", std::to_string(getpid()).c_str(), 1);
  }
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  atexit(on_exit_handler);
  install_signal(SIGTERM);
  install_signal(SIGINT);
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
