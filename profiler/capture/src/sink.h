// Where a session's frames go: `edo record`'s Unix socket (EDO_CHANNEL) or a frame file
// (EDO_OUTPUT; a process other than the file's owner writes <path>.<pid>). Opened at the first
// write.
//
// What cannot be delivered is counted here (lost_writes/lost_bytes, with the first reason):
// the session turns the counts into drop counters that ride on the next frames that do get
// through, and prints one line at exit when some never did (lifecycle.cpp).
//  * Channel: once the collector is gone (connect or send fails, or it closed the connection)
//    the sink stays dead and the job runs on untraced.
//  * File: a failed write (disk full, RLIMIT_FSIZE, I/O error) is cut back to the last whole
//    frame and the next flush tries again; only a file that cannot be opened is given up.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace edo::capture {

struct SinkTarget {
  std::string channel;  // socket path, or empty
  std::string output;   // frame file, used when channel is empty
  bool verbose = false;
};

class Sink {
 public:
  Sink(SinkTarget target, int64_t pid) : target_(std::move(target)), pid_(pid) {}
  ~Sink();
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  // Writes all of `data` (retrying short writes and EINTR). False when it could not: the
  // bytes are lost and counted.
  bool write(const std::string& data);
  // Channel only, never blocks: true when the collector asked for a flush since the last
  // call (`edo record` is about to pass a signal on to the job). Reading the collector's
  // end of the connection also notices that it closed it.
  bool flush_requested();
  // Channel only: connects now unless a connection was already tried (cheap after the first
  // call). Called when the process registers a table or reads one, so that from the moment
  // the call returns the collector knows the process (its connection at least waits in the
  // collector's backlog) and can ask it for a flush before passing a signal on. Without it
  // the connection waited for the first flush on the background thread, ~20 ms later, and a
  // SIGTERM to `edo record` in between killed a job that had registered tables with nothing
  // sent (issue 24). File mode keeps opening at the first write.
  void connect_early();

  uint64_t lost_writes() const { return lost_writes_.load(); }
  uint64_t lost_bytes() const { return lost_bytes_.load(); }
  // Why the first lost write was lost ("" when none was), e.g. "the collector at P went away
  // (Broken pipe)" or "cannot write F: No space left on device".
  std::string lost_reason() const;

  // In a forked child: the parent's connection or file is not this process's to write; the
  // child's new session opens its own.
  void close_inherited();

 private:
  bool open_locked();
  bool write_file_locked(const std::string& data);
  bool send_locked(const std::string& data);
  void lose_locked(size_t bytes, const std::string& why);
  const SinkTarget target_;
  const int64_t pid_;
  mutable std::mutex mu_;
  int fd_ = -1;          // mu_
  bool dead_ = false;    // mu_: no further attempt
  std::string path_;     // mu_: the file actually written (file mode)
  std::string reason_;   // mu_: the first loss
  std::atomic<uint64_t> lost_writes_{0}, lost_bytes_{0};
  std::atomic<bool> connect_tried_{false};  // connect_early() has nothing more to do
};

// The byte `edo record` sends on a connection to ask for a flush.
inline constexpr char kFlushRequestByte = 'F';

}  // namespace edo::capture
