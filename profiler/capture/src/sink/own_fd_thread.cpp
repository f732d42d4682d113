#include "own_fd_thread.h"

#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <utility>

namespace edo::capture {
namespace {

// Closes every descriptor of this thread's (private) table: the copy of the job's that
// unshare() made. close_range(2) (Linux 5.9) when the kernel has it, else one by one up to the
// limit. Only references of our table go: the job's own stay open in its table.
void close_copied_descriptors() {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 0u, ~0u, 0u) == 0) return;
#endif
  rlimit rl{};
  long top = 1L << 16;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < rlim_t(1) << 20) top = long(rl.rlim_cur);
  for (long fd = 0; fd < top; ++fd) ::close(int(fd));
}

}  // namespace

OwnFdThread::~OwnFdThread() {
  if (forgotten_) return;
  std::unique_lock<std::mutex> lk(mu_);
  if (state_ != State::kOwn) return;
  stop_ = true;
  cv_.notify_all();
  lk.unlock();
  pthread_join(thread_, nullptr);
}

void* OwnFdThread::main_of(void* self) {
  static_cast<OwnFdThread*>(self)->serve();
  return nullptr;
}

void OwnFdThread::serve() {
  // Signals stay blocked (inherited from start_locked): the job's handlers run on its threads.
  const bool own = ::unshare(CLONE_FILES) == 0;
  if (own) close_copied_descriptors();
  std::unique_lock<std::mutex> lk(mu_);
  state_ = own ? State::kOwn : State::kShared;
  cv_.notify_all();
  if (!own) return;
  while (true) {
    cv_.wait(lk, [this] { return stop_ || fn_ != nullptr; });
    if (stop_) break;
    try {
      fn_(arg_);
    } catch (...) {
      failed_ = std::current_exception();  // rethrown on the caller's thread, as if it ran there
    }
    fn_ = nullptr;
    cv_.notify_all();
  }
  state_ = State::kStopped;
}

bool OwnFdThread::start_locked(std::unique_lock<std::mutex>& lk) {
  state_ = State::kStarting;
  // Every signal blocked in the new thread (it inherits the creator's mask): a signal meant for
  // the job is never delivered here.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);  // syscalls and error strings: a small stack
  const int err = pthread_create(&thread_, &attr, &OwnFdThread::main_of, this);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (err != 0) {
    state_ = State::kShared;
    return false;
  }
  cv_.wait(lk, [this] { return state_ != State::kStarting; });
  if (state_ == State::kShared) {
    pthread_join(thread_, nullptr);  // it ended at once: unshare was refused
    return false;
  }
  return true;
}

bool OwnFdThread::run(void (*fn)(void*), void* arg) {
  if (forgotten_) return false;
  std::unique_lock<std::mutex> lk(mu_);
  if (state_ == State::kNotStarted && !start_locked(lk)) return false;
  if (state_ != State::kOwn) return false;
  fn_ = fn;
  arg_ = arg;
  cv_.notify_all();
  cv_.wait(lk, [this] { return fn_ == nullptr; });
  if (failed_) std::rethrow_exception(std::exchange(failed_, nullptr));
  return true;
}

bool OwnFdThread::own_table() {
  if (forgotten_) return false;
  std::lock_guard<std::mutex> lk(mu_);
  return state_ == State::kOwn;
}

}  // namespace edo::capture
