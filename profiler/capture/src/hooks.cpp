// Interposed libc entry points: flush before the process image is replaced (exec*) or ends
// without atexit (_exit). Each wrapper does nothing but pass through when the tracer is
// inactive or when called from a vfork()ed child (its pid differs from the session's: it
// shares the parent's memory, so it must not touch our state).
#include <dlfcn.h>
#include <stdarg.h>
#include <unistd.h>

#include <cerrno>

#include "tracer.h"

using namespace edo::capture;

namespace {

using execve_t = int (*)(const char*, char* const[], char* const[]);
using execv_t = int (*)(const char*, char* const[]);
using fexecve_t = int (*)(int, char* const[], char* const[]);
using exit_t = void (*)(int);

execve_t real_execve = nullptr;
execv_t real_execv = nullptr;
execv_t real_execvp = nullptr;
execve_t real_execvpe = nullptr;
fexecve_t real_fexecve = nullptr;
exit_t real__exit = nullptr;
exit_t real__Exit = nullptr;

template <class T>
void resolve(T& f, const char* name) {
  if (!f) f = reinterpret_cast<T>(dlsym(RTLD_NEXT, name));
}

__attribute__((constructor(102))) void resolve_all() {
  resolve(real_execve, "execve");
  resolve(real_execv, "execv");
  resolve(real_execvp, "execvp");
  resolve(real_execvpe, "execvpe");
  resolve(real_fexecve, "fexecve");
  resolve(real__exit, "_exit");
  resolve(real__Exit, "_Exit");
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

void before_exit(int code) {
  if (!tracer_active() || session_pid() != getpid()) return;
  try {
    flush_now(true, 0 /* exit */, code);
  } catch (...) {
  }
}

constexpr int kMaxArgs = 4096;

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int execve(const char* path, char* const argv[], char* const envp[]) {
  resolve(real_execve, "execve");
  before_exec();
  return real_execve(path, argv, envp);
}

__attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) {
  resolve(real_execv, "execv");
  before_exec();
  return real_execv(path, argv);
}

__attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]) {
  resolve(real_execvp, "execvp");
  before_exec();
  return real_execvp(file, argv);
}

__attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[], char* const envp[]) {
  resolve(real_execvpe, "execvpe");
  before_exec();
  return real_execvpe(file, argv, envp);
}

__attribute__((visibility("default"))) int fexecve(int fd, char* const argv[], char* const envp[]) {
  resolve(real_fexecve, "fexecve");
  before_exec();
  return real_fexecve(fd, argv, envp);
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

__attribute__((visibility("default"))) void _exit(int code) {
  resolve(real__exit, "_exit");
  before_exit(code);
  real__exit(code);
  __builtin_unreachable();
}

__attribute__((visibility("default"))) void _Exit(int code) {
  resolve(real__Exit, "_Exit");
  before_exit(code);
  real__Exit(code);
  __builtin_unreachable();
}

}  // extern "C"
