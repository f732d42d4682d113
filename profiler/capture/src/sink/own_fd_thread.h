// A thread with a descriptor table of its own, where the sink keeps its socket and file.
//
// The job's descriptors are the job's (docs/losses.md): a job may close every fd >= 3, or dup2()
// onto any number, at any moment, from any thread. In the process's shared descriptor table a
// library can only check a number's identity before each use (sink.cpp), and between the check
// and the write() the job can still dup2() its own file onto that number: the frame then lands
// in the job's file or socket. A thread that called unshare(CLONE_FILES) has a table no other
// thread sees (unshare(2): "Reverse the effect of the CLONE_FILES flag ... Unshare the file
// descriptor table, so that the calling process no longer shares its file descriptors with any
// other process"; per task, so per thread): what it opens there, no job thread can close,
// replace or even list (/proc/self/fd lists the thread-group leader's table). The copy unshare
// makes of the job's descriptors is closed at once, so that it keeps none of the job's files,
// pipes or sockets open (a reader waiting for EOF on the job's pipe still gets it). A job that
// forks copies its own thread's table, which never held ours; an exec ends this thread and its
// table with it.
//
// unshare may be refused: Docker's default seccomp profile allows it only with CAP_SYS_ADMIN
// (moby profiles/seccomp/default.json lists "unshare" under that capability). Then run()
// answers false and the sink does its work on the calling thread, in the shared table, with the
// identity checks of sink.cpp (the behaviour before this thread existed).
#pragma once

#include <pthread.h>

#include <condition_variable>
#include <exception>
#include <mutex>

namespace edo::capture {

class OwnFdThread {
 public:
  OwnFdThread() = default;
  ~OwnFdThread();
  OwnFdThread(const OwnFdThread&) = delete;
  OwnFdThread& operator=(const OwnFdThread&) = delete;

  // Runs fn(arg) on the thread (started at the first call) and waits for it; what fn throws is
  // rethrown here. False when there is no such thread (unshare refused, or the thread could not
  // be started): fn did not run, and the caller runs it itself. Callers serialise their calls
  // (the sink's lock).
  bool run(void (*fn)(void*), void* arg);
  template <class F>
  bool run(F& f) {
    return run([](void* p) { (*static_cast<F*>(p))(); }, &f);
  }

  // True once the thread runs with a table of its own (for tests and the verbose log).
  bool own_table();

  // In a forked child: the thread belongs to the parent (it does not exist here, and the lock
  // may have been copied taken). Nothing of it is touched again; run() answers false.
  void forget() { forgotten_ = true; }

 private:
  enum class State { kNotStarted, kStarting, kOwn, kShared, kStopped };
  static void* main_of(void* self);
  void serve();
  bool start_locked(std::unique_lock<std::mutex>& lk);

  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::kNotStarted;  // mu_
  void (*fn_)(void*) = nullptr;       // mu_: the work posted, until done
  void* arg_ = nullptr;               // mu_
  std::exception_ptr failed_;         // mu_: what the work threw
  bool stop_ = false;                 // mu_
  pthread_t thread_{};
  bool forgotten_ = false;  // set only in a single-threaded fork child
};

}  // namespace edo::capture
