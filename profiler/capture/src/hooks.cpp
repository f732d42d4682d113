// Interposed libc entry points: flush before the process image is replaced (exec*), ends
// without atexit (_exit), or is ended by a signal it sends itself (kill, raise: Python's exit
// after an unhandled KeyboardInterrupt, a C job's "signal(sig, SIG_DFL); raise(sig);"). Each
// wrapper does nothing but pass through when the tracer is inactive or when called from a
// vfork()ed child (its pid differs from the session's: it shares the parent's memory, so it
// must not touch our state). No signal handler is ever installed.
#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <unistd.h>

#include <cerrno>

#include "events.h"
#include "lifecycle.h"

using namespace edo::capture;

namespace {

using execve_t = int (*)(const char*, char* const[], char* const[]);
using execv_t = int (*)(const char*, char* const[]);
using fexecve_t = int (*)(int, char* const[], char* const[]);
using exit_t = void (*)(int);
using kill_t = int (*)(pid_t, int);
using raise_t = int (*)(int);

execve_t real_execve = nullptr;
execv_t real_execv = nullptr;
execv_t real_execvp = nullptr;
execve_t real_execvpe = nullptr;
fexecve_t real_fexecve = nullptr;
exit_t real__exit = nullptr;
exit_t real__Exit = nullptr;
kill_t real_kill = nullptr;
raise_t real_raise = nullptr;

template <class T>
void resolve_next(T& f, const char* name) {
  if (!f) f = reinterpret_cast<T>(dlsym(RTLD_NEXT, name));
}

__attribute__((constructor(102))) void resolve_all() {
  resolve_next(real_execve, "execve");
  resolve_next(real_execv, "execv");
  resolve_next(real_execvp, "execvp");
  resolve_next(real_execvpe, "execvpe");
  resolve_next(real_fexecve, "fexecve");
  resolve_next(real__exit, "_exit");
  resolve_next(real__Exit, "_Exit");
  resolve_next(real_kill, "kill");
  resolve_next(real_raise, "raise");
}

void before_exec() {
  if (!tracer_active() || session_pid() != getpid()) return;
  const int saved = errno;
  try {
    flush_now(true, 2 /* exec */, 0);
  } catch (...) {
  }
  errno = saved;
}

void after_failed_exec() {
  const int saved = errno;
  try {
    resume_after_failed_exec();
  } catch (...) {
  }
  errno = saved;
}

void before_exit(int code) {
  if (!tracer_active() || session_pid() != getpid()) return;
  try {
    flush_now(true, 0 /* exit */, code);
  } catch (...) {
  }
}

// True when `sig` ends the process by its default action: a terminating signal (not SIGKILL:
// "now" means now) whose disposition is SIG_DFL. The calling thread's mask is not consulted:
// inside the job's own handler the signal is blocked until the handler returns, and is then
// delivered (the classic re-raise). Only async-signal-safe calls (the caller may be a signal
// handler).
bool ends_process(int sig) {
  switch (sig) {
    case SIGKILL: case SIGSTOP: case SIGTSTP: case SIGTTIN: case SIGTTOU:  // now / stop
    case SIGCHLD: case SIGCONT: case SIGURG: case SIGWINCH:                 // ignored by default
      return false;
    default:
      break;
  }
  if (sig <= 0 || sig >= NSIG) return false;
  struct sigaction cur{};
  if (sigaction(sig, nullptr, &cur) != 0) return false;
  return !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL;
}

void before_own_signal(bool to_self, int sig) {
  if (!to_self || !tracer_active() || session_pid() != getpid()) return;
  const int saved = errno;
  if (ends_process(sig)) flush_before_fatal_signal(sig);
  errno = saved;
}

constexpr int kMaxArgs = 4096;

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int execve(const char* path, char* const argv[], char* const envp[]) {
  resolve_next(real_execve, "execve");
  before_exec();
  const int rc = real_execve(path, argv, envp);
  after_failed_exec();
  return rc;
}

__attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) {
  resolve_next(real_execv, "execv");
  before_exec();
  const int rc = real_execv(path, argv);
  after_failed_exec();
  return rc;
}

__attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]) {
  resolve_next(real_execvp, "execvp");
  before_exec();
  const int rc = real_execvp(file, argv);
  after_failed_exec();
  return rc;
}

__attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[], char* const envp[]) {
  resolve_next(real_execvpe, "execvpe");
  before_exec();
  const int rc = real_execvpe(file, argv, envp);
  after_failed_exec();
  return rc;
}

__attribute__((visibility("default"))) int fexecve(int fd, char* const argv[], char* const envp[]) {
  resolve_next(real_fexecve, "fexecve");
  before_exec();
  const int rc = real_fexecve(fd, argv, envp);
  after_failed_exec();
  return rc;
}

#define EDO_COLLECT_ARGS(first, last_out)                      \
  char* args[kMaxArgs];                                        \
  int n = 0;                                                   \
  args[n++] = const_cast<char*>(first);                        \
  va_list ap;                                                  \
  va_start(ap, first);                                         \
  while (n < kMaxArgs - 1) {                                   \
    char* a = va_arg(ap, char*);                               \
    args[n++] = a;                                             \
    if (!a) break;                                             \
  }                                                            \
  args[kMaxArgs - 1] = nullptr;                                \
  last_out;                                                    \
  va_end(ap)

__attribute__((visibility("default"))) int execl(const char* path, const char* arg, ...) {
  EDO_COLLECT_ARGS(arg, (void)0);
  return execv(path, args);
}

__attribute__((visibility("default"))) int execlp(const char* file, const char* arg, ...) {
  EDO_COLLECT_ARGS(arg, (void)0);
  return execvp(file, args);
}

__attribute__((visibility("default"))) int execle(const char* path, const char* arg, ...) {
  char** envp = nullptr;
  EDO_COLLECT_ARGS(arg, envp = va_arg(ap, char**));
  return execve(path, args, envp);
}

__attribute__((visibility("default"))) int kill(pid_t pid, int sig) {
  resolve_next(real_kill, "kill");
  // pid 0 and -pgrp name the caller's own process group, which holds the caller.
  before_own_signal(pid == getpid() || pid == 0 || (pid < -1 && -pid == getpgrp()), sig);
  return real_kill(pid, sig);
}

__attribute__((visibility("default"))) int raise(int sig) {
  resolve_next(real_raise, "raise");
  before_own_signal(true, sig);
  return real_raise(sig);
}

__attribute__((visibility("default"))) void _exit(int code) {
  resolve_next(real__exit, "_exit");
  before_exit(code);
  real__exit(code);
  __builtin_unreachable();
}

__attribute__((visibility("default"))) void _Exit(int code) {
  resolve_next(real__Exit, "_Exit");
  before_exit(code);
  real__Exit(code);
  __builtin_unreachable();
}

}  // extern "C"
