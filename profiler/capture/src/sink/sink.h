// Where a session's frames go: `edo record`'s Unix socket (EDO_CHANNEL) or a frame file
// (EDO_OUTPUT; a process other than the file's owner writes <path>.<pid>). Opened at the first
// write.
//
// The job's descriptors are the job's (issue 30). The sink opens, uses and closes its socket
// or file on a thread with a descriptor table of its own (own_fd_thread.h), which no job thread
// can close, replace or see. Where the system refuses that thread a table of its own (a
// container's seccomp profile), the sink works in the shared table: every descriptor it holds
// is moved to a high number (>= kHighFd, close-on-exec) so that a job that closes every fd >= 3
// and opens its own files or sockets does not get our number back, and its identity (device,
// inode, type) is checked before every use: send, recv, write, truncate, close. A number that
// holds something else now (the job closed ours and reused it, or dup2'ed onto it) is never
// touched again, and never closed: it is the job's. (A dup2() onto our number between the check
// and the write still sends that frame into the job's file: only the own table closes that
// window.) Then:
//  * Channel: the connection is gone, as if the collector had closed it.
//  * File: the file is ours by its path: it is opened again (appending) and the stream goes on.
//
// What cannot be delivered is kept or counted here:
//  * Channel: once the collector is gone (connect or send fails, it closed the connection, or
//    the job closed our descriptor) the sink never uses the channel again. With an unsent
//    prefix (EDO_UNSENT, set by `edo record` to <output>.unsent) it switches to the file
//    <prefix>.<pid>, in the EDO_OUTPUT format, and the frame that failed goes there: the
//    session re-says first what a self-contained trace needs (write()'s `resay`), so that
//    `edo import <prefix>.*` makes a database of everything the collector did not get. Without
//    one (or when that file cannot be written), the job runs on untraced and the loss is
//    counted (lost_writes/lost_bytes, with the first reason).
//  * File: a failed write (disk full, RLIMIT_FSIZE, I/O error) is cut back to the last whole
//    frame and the next flush tries again; only a file that cannot be opened is given up.
// The session turns the counts into drop counters that ride on the next frames that do get
// through, and prints one line at exit when some never did, or when frames went to the
// unsent file (lifecycle.cpp).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "own_fd_thread.h"

namespace edo::capture {

struct SinkTarget {
  std::string channel;  // socket path, or empty
  std::string output;   // frame file, used when channel is empty
  bool verbose = false;
  std::string unsent;   // channel only: prefix of the file that keeps what it cannot deliver
};

// The lowest number a sink's descriptor is moved to (lower when RLIMIT_NOFILE is lower).
inline constexpr int kHighFd = 1000;

class Sink {
 public:
  Sink(SinkTarget target, int64_t pid)
      : target_(std::move(target)), pid_(pid), mode_(target_.channel.empty() ? Mode::kFile : Mode::kChannel) {}
  ~Sink();
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  // What a new stream needs around the frames written to it: {before, after}. Called by
  // write() outside the sink's lock when the frames go to a stream that has not had them:
  // the unsent file after the channel died (`spill` true), or an EDO_OUTPUT file that was
  // replaced under the job.
  using Resay = std::function<std::pair<std::string, std::string>(bool spill)>;

  // Writes all of `data` (retrying short writes and EINTR); when the channel fails on the way,
  // to the unsent file instead. False when it could not: the bytes are lost and counted.
  bool write(const std::string& data, const Resay& resay = {});
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
  // Frames written to the unsent file since the channel died, and why it died.
  uint64_t kept_writes() const { return kept_writes_.load(); }
  uint64_t kept_bytes() const { return kept_bytes_.load(); }
  bool spilling() const;
  std::string spill_path() const;
  std::string gone_reason() const;

  // In a forked child: the parent's connection or file is not this process's to write; the
  // child's new session opens its own.
  void close_inherited();

 private:
  // A descriptor of ours and what it was when we opened it.
  struct Held {
    int fd = -1;
    dev_t dev = 0;
    ino_t ino = 0;
    mode_t type = 0;
  };
  enum class Mode { kChannel, kFile, kSpill };
  bool open_locked();
  bool connect_locked();
  bool open_file_locked(const std::string& path, bool after_channel);
  // The channel is gone: never used again; the unsent file from now on when there is one.
  void channel_gone_locked(const std::string& why);
  // True when fd_ still holds the descriptor we opened. A file that is not ours any more is
  // opened again by its path (false when that fails); a socket that is not is gone.
  bool ours_locked();
  bool write_file_locked(const std::string& data);
  bool flush_requested_locked();
  bool send_locked(const std::string& data);
  void lose_locked(size_t bytes, const std::string& why);
  void close_locked();  // closes fd_ only when it is still ours; forgets it in any case
  // Runs f() where the sink's descriptors live: on io_'s thread, else (no table of its own) here.
  // Called with mu_ held; what the work wanted to say (say_locked) is printed here afterwards,
  // on the caller's thread, whose stderr is the job's (the own table holds no stderr).
  template <class F>
  auto with_descriptors_locked(F f) -> decltype(f()) {
    decltype(f()) result{};
    auto work = [&] { result = f(); };
    if (!io_.run(work)) work();
    for (const std::string& line : said_) say_now(line);
    said_.clear();
    return result;
  }
  void say_locked(const std::string& line) { said_.push_back(line); }
  static void say_now(const std::string& line);
  const SinkTarget target_;
  const int64_t pid_;
  mutable std::mutex mu_;
  Mode mode_;            // mu_: kChannel, then kSpill once it is gone; kFile without a channel
  Held fd_;              // mu_
  bool dead_ = false;    // mu_: no further attempt
  bool resay_ = false;   // mu_: the current stream needs the session's resay before the next frames
  std::string path_;     // mu_: the file actually written (file and spill modes)
  std::string reason_;   // mu_: the first loss
  std::string gone_;     // mu_: why the channel went away
  std::string last_error_;  // mu_: why the last file write failed
  bool taken_ = false;      // mu_: the last file write failed because the number was not ours any more
  std::atomic<uint64_t> lost_writes_{0}, lost_bytes_{0};
  std::atomic<uint64_t> kept_writes_{0}, kept_bytes_{0};
  std::atomic<bool> connect_tried_{false};  // connect_early() has nothing more to do
  std::vector<std::string> said_;  // mu_: log lines of the work on io_'s thread, printed by the caller
  OwnFdThread io_;                 // last: its thread stops (destructor) before the members it uses go
};

// The byte `edo record` sends on a connection to ask for a flush.
inline constexpr char kFlushRequestByte = 'F';

}  // namespace edo::capture
