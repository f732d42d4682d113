// ProcessLauncher: the job in a process group of its own (that it does not lead), with the
// terminal while it runs (job_launcher.h says why). Terminal handling follows what a job-control shell does
// (POSIX "General Terminal Interface", tcsetpgrp(3): a process outside the foreground group
// that changes it must block or ignore SIGTTOU).
#include "edo/collector/job_launcher.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace edo::collector {
namespace {

// Blocks SIGTTOU for its lifetime: tcsetpgrp() from a process outside the terminal's
// foreground group is allowed only then (otherwise the caller is stopped).
struct HoldTtou {
  sigset_t old;
  HoldTtou() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGTTOU);
    sigprocmask(SIG_BLOCK, &s, &old);
  }
  ~HoldTtou() { sigprocmask(SIG_SETMASK, &old, nullptr); }
};

// The controlling terminal when this process leads its terminal's foreground group (a
// job-control shell started it as a job), or -1. In a group it does not lead (a script, make,
// a test runner: no job control) the terminal stays with that group, so that Ctrl-C reaches
// the script as before; edo gets it too and passes it on to the job once.
int foreground_terminal() {
  if (getpgrp() != getpid()) return -1;
  const int fd = ::open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return -1;
  if (tcgetpgrp(fd) != getpgrp()) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Without the terminal handed over, a SIGTSTP (Ctrl-Z reaching a script's group, or `kill
// -TSTP`) stops edo: it stops the job's group first, and continues it when edo continues, so
// that the job never runs on behind a stopped edo. Only async-signal-safe calls.
volatile sig_atomic_t g_job_group = 0;

void on_tstp(int) {
  const int saved = errno;
  const pid_t group = g_job_group;
  if (group > 0) kill(-group, SIGTSTP);
  kill(getpid(), SIGSTOP);
  if (group > 0) kill(-group, SIGCONT);
  errno = saved;
}

}  // namespace

int exit_code_of_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

ProcessLauncher::~ProcessLauncher() {
  take_terminal_back();
  if (tty_ >= 0) ::close(tty_);
  if (tstp_installed_) {
    sigaction(SIGTSTP, &old_tstp_, nullptr);
    g_job_group = 0;
  }
}

int64_t ProcessLauncher::start(const JobCommand& cmd) {
  if (pid_ > 0) throw std::runtime_error("the job was started already");
  // Everything the child needs is built before fork(): the child only makes system calls.
  std::vector<std::string> env = cmd.env;
  if (!cmd.pid_variable.empty()) env.push_back(cmd.pid_variable + "=");  // the pid goes after '='
  const size_t pid_slot = cmd.pid_variable.empty() ? env.size() : env.size() - 1;
  char pid_value[256] = {};
  std::vector<char*> envp, argv;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = cmd.argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  tty_ = foreground_terminal();
  leader_ = getpgrp() == getpid();
  const pid_t parent = getpid();
  if (tty_ < 0) {
    struct sigaction sa{};
    sa.sa_handler = on_tstp;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTSTP, nullptr, &old_tstp_);
    // An ignored SIGTSTP (nohup-like launchers) stays ignored, for edo and the job.
    if (old_tstp_.sa_handler != SIG_IGN) tstp_installed_ = sigaction(SIGTSTP, &sa, nullptr) == 0;
  }

  std::fflush(nullptr);
  // The anchor: a child that only creates the job's process group (its pid is the group's id)
  // and pauses until the job has joined it; then edo kills and reaps it. The job is thus in a
  // group of its own without leading it, so that setsid() works in the job as it does without
  // edo (issue 30), and the group lives on after the anchor is gone: a group id stays valid
  // (and its number is not reused) while any member lives. job_launcher.h says why a group of
  // its own at all.
  const pid_t anchor = fork();
  if (anchor < 0) throw std::runtime_error(std::string("cannot fork: ") + std::strerror(errno));
  if (anchor == 0) {
    setpgid(0, 0);
    // Never outlives edo: edo kills it as soon as the job has joined (or could not start).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0);
    while (true) pause();
  }
  setpgid(anchor, anchor);  // the anchor does the same; the group exists once either returned
  const auto drop_anchor = [anchor] {
    kill(anchor, SIGKILL);
    while (waitpid(anchor, nullptr, 0) < 0 && errno == EINTR) {
    }
  };
  const pid_t child = fork();
  if (child < 0) {
    const int err = errno;
    drop_anchor();
    throw std::runtime_error(std::string("cannot fork: ") + std::strerror(err));
  }
  if (child == 0) {
    // The parent does the same two calls (whichever runs first wins; a shell does both too).
    setpgid(0, anchor);
    if (tty_ >= 0) {
      HoldTtou hold;
      tcsetpgrp(tty_, anchor);
    }
    // No PR_SET_PDEATHSIG: the job outlives a collector that dies (issue 30), as it would
    // without edo; what its tracer cannot send any more goes to EDO_UNSENT's files.
    for (auto& [sig, sa] : cmd.dispositions) sigaction(sig, &sa, nullptr);
    if (tstp_installed_) sigaction(SIGTSTP, &old_tstp_, nullptr);
    if (pid_slot < env.size()) {
      std::snprintf(pid_value, sizeof pid_value, "%s%d", env[pid_slot].c_str(), int(getpid()));
      envp[pid_slot] = pid_value;
    }
    execve(cmd.exe.c_str(), argv.data(), envp.data());
    std::fprintf(stderr, "edo record: cannot run %s: %s\n", cmd.exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  pid_ = child;
  pgid_ = anchor;
  g_job_group = anchor;
  // EACCES once the child has exec'd: it did the call itself, before exec. Either way the job
  // is in the anchor's group when this returns, and the anchor can go.
  setpgid(child, anchor);
  if (tty_ >= 0) {
    HoldTtou hold;
    tcsetpgrp(tty_, anchor);
  }
  drop_anchor();
  return child;
}

std::optional<int> ProcessLauncher::poll_exit() {
  if (pid_ <= 0 || ended_) return std::nullopt;
  int status = 0;
  // A job-control shell's job (edo leads its group): a job stopped by Ctrl-Z, or by SIGTTIN /
  // SIGTTOU in the background, is reported too, and edo stops in turn, so that the shell sees
  // its job stopped (and gets the terminal back). Elsewhere nobody would continue a stopped
  // edo: a job stopped by someone is left to them.
  const pid_t r = waitpid(pid_, &status, WNOHANG | (leader_ ? WUNTRACED : 0));
  if (r != pid_) return std::nullopt;
  if (WIFSTOPPED(status)) {
    on_job_stopped();
    return std::nullopt;
  }
  ended_ = true;
  take_terminal_back();
  return exit_code_of_status(status);
}

void ProcessLauncher::on_job_stopped() {
  // The terminal comes back to edo's group only from the job's: after `bg` the shell has it,
  // and a job stopped by SIGTTIN then must not take it from the shell.
  take_terminal_back();
  kill(getpid(), SIGSTOP);  // SIGSTOP: whatever edo inherited for SIGTSTP, it does stop
  // Continued (`fg` or `bg`): the job gets the terminal when edo has it (`fg`, also for an
  // edo started in the background), and continues in either case, as the shell's job would.
  if (tty_ < 0) tty_ = foreground_terminal();
  if (tty_ >= 0 && tcgetpgrp(tty_) == getpgrp()) {
    HoldTtou hold;
    tcsetpgrp(tty_, pgid_);
  }
  if (kill(-pgid_, SIGCONT) != 0) kill(pid_, SIGCONT);
}

void ProcessLauncher::take_terminal_back() {
  if (tty_ < 0) return;
  // Only when the job's group still has it: a shell may have given it to another job since.
  if (pgid_ > 0 && tcgetpgrp(tty_) == pgid_) {
    HoldTtou hold;
    tcsetpgrp(tty_, getpgrp());
  }
}

void ProcessLauncher::signal(int sig) {
  if (pid_ <= 0 || ended_) return;
  // A hung-up terminal (the controlling terminal's fd answers EIO): the kernel sent SIGHUP to
  // its foreground group, the job's, before the shell passed one to edo.
  if (sig == SIGHUP && tty_ >= 0 && tcgetpgrp(tty_) < 0) return;
  if (kill(-pgid_, sig) != 0) kill(pid_, sig);
}

}  // namespace edo::collector
