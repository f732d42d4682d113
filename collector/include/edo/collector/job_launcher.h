// How `edo record` runs the job, behind an interface so that the recorder (recorder.h) can be
// tested with a fake job.
//
// The real launcher (ProcessLauncher) starts the job in a process group of its own, and, when
// edo runs as a job of an interactive shell (it leads the terminal's foreground group), makes
// the job's group the terminal's foreground group for as long as the job runs. Why: a signal
// sent to edo's process group (`kill -TERM -PGID`, `timeout`, a batch scheduler killing a
// process group, a shell's `kill %1`) then reaches edo alone, and edo passes it on once, after
// a flush; Ctrl-C, Ctrl-backslash and Ctrl-Z typed in the terminal reach the job's group
// directly and never edo. With the job in edo's group a group signal reached the job twice:
// directly, and again from edo (issue 18). siginfo cannot tell a signal sent to edo's pid from
// one sent to its group, so keeping the two apart is the only way for edo to know that a
// signal it got has not reached the job. Started by a script (edo in a group it does not
// lead), edo leaves the terminal to that group: Ctrl-C reaches the script and edo, and edo
// passes it on.
//
// The job must still not notice any of this (issue 30): it is not the leader of its group.
// A short-lived "anchor" child of edo creates the group (its pid is the group id) and waits;
// the job joins that group before exec, and edo then kills and reaps the anchor. The group
// outlives the anchor (a group id stays valid, and is not reused as a pid, while any member
// lives), so every signal, tcsetpgrp() and kill(-pgid) above works as before, while the job,
// not being a group leader, can call setsid() (a daemon, a job starting its own session)
// exactly as it can without edo, where a shell or script starts it as a group member too.
// (Tools such as strace, `time` or heaptrack keep the job in the caller's group instead; edo
// cannot, for the reason above.) And the job does not die with edo: no PR_SET_PDEATHSIG. A
// collector that crashes or is killed is a fault the job survives; what its tracer cannot
// send any more goes to the files EDO_UNSENT names (docs/losses.md).
//
// Limits (README, `edo record`):
//  * A signal sent to every process of a cgroup (systemd's KillMode=control-group, some
//    schedulers' cancel) reaches the job directly and again from edo.
//  * SIGKILL to edo's group (or to edo) kills edo only; the job runs on to its end, and its
//    tracer keeps what it records from then on in <output>.unsent.<pid>.
//  * A process of the job that leaves the job's group (setsid, setpgid) gets only what it
//    would get without edo from a signal to its own group.
//  * Started by a script in a terminal, Ctrl-Z and Ctrl-backslash reach the script's group
//    (edo) and not the job: edo stops the job's group when it stops (and continues it
//    after); a Ctrl-backslash (SIGQUIT) edo passes on, as SIGINT, SIGTERM and SIGHUP.
#pragma once

#include <signal.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace edo::collector {

struct JobCommand {
  std::string exe;                // the resolved executable
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // NAME=VALUE, the job's whole environment
  // Set in the job's environment to the job's own pid (NAME), or nothing when empty.
  std::string pid_variable;
  // Dispositions the job starts with (what edo's own handlers replaced).
  std::vector<std::pair<int, struct sigaction>> dispositions;
};

class JobLauncher {
 public:
  virtual ~JobLauncher() = default;
  // Starts the job and returns its pid; throws std::runtime_error (one line) when it cannot.
  // An exec that fails is the job's exit code 127, as in a shell.
  virtual int64_t start(const JobCommand& cmd) = 0;
  // Never blocks: the job's exit code (its code, or 128+signal) once its first process ended.
  virtual std::optional<int> poll_exit() = 0;
  // Passes a signal on to the job.
  virtual void signal(int sig) = 0;
};

// fork + exec, the job in its own process group, created by an anchor (see above).
class ProcessLauncher : public JobLauncher {
 public:
  ProcessLauncher() = default;
  ~ProcessLauncher() override;  // gives the terminal back if the job still had it
  ProcessLauncher(const ProcessLauncher&) = delete;
  ProcessLauncher& operator=(const ProcessLauncher&) = delete;

  int64_t start(const JobCommand& cmd) override;
  std::optional<int> poll_exit() override;
  // To the job's process group (every process the job started that stayed in it, as a group
  // signal to edo reached them all when they shared edo's group); to its first process when
  // that group is gone. A SIGHUP is not passed on when the terminal the job had was hung up:
  // the kernel sent it to the job's group already.
  void signal(int sig) override;

 private:
  void take_terminal_back();
  void on_job_stopped();

  pid_t pid_ = -1;
  pid_t pgid_ = -1;  // the job's process group: the anchor's pid, valid while the job's group lives
  int tty_ = -1;  // the controlling terminal, while the job's group is (or may be) its foreground
  bool ended_ = false;
  bool leader_ = false;  // edo leads its process group (a job-control shell's job)
  bool tstp_installed_ = false;  // without the terminal: SIGTSTP stops the job's group too
  struct sigaction old_tstp_ {};
};

// The exit code of a waitpid() status: the code, or 128+signal.
int exit_code_of_status(int status);

}  // namespace edo::collector
