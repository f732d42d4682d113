// Guard for the library's own file writes (frame files, stderr lines).
#pragma once

#include <pthread.h>
#include <signal.h>
#include <time.h>

namespace edo::capture {

// A write beyond RLIMIT_FSIZE sends SIGXFSZ to the writing thread, and its default action
// ends the process: our write must never do that to the job. The signal is held back while
// we write and, when our write raised it, taken back (a SIGXFSZ the job had pending already
// is left alone).
class QuietFileSizeSignal {
 public:
  QuietFileSizeSignal() {
    sigemptyset(&xfsz_);
    sigaddset(&xfsz_, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz_, &old_);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGXFSZ) == 1;
  }
  ~QuietFileSizeSignal() {
    if (!was_pending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGXFSZ) == 1) {
        timespec zero{0, 0};
        sigtimedwait(&xfsz_, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t xfsz_, old_;
  bool was_pending_ = false;
};

}  // namespace edo::capture
