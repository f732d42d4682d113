// Where a session's frames go: `edo record`'s Unix socket (EDO_CHANNEL) or a frame file
// (EDO_OUTPUT; a process other than the file's owner writes <path>.<pid>). Opened at the first
// write; once the collector is gone, the sink stays dead and the job runs on untraced.
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

  // Writes all of `data` (retrying short writes and EINTR); on failure the sink is dead.
  void write(const std::string& data);
  uint64_t unsent_bytes() const { return unsent_bytes_.load(); }
  // In a forked child: the parent's connection or file is not this process's to write; the
  // child's new session opens its own.
  void close_inherited();

  // Held across fork() (see lifecycle.cpp).
  std::mutex& mutex() { return mu_; }

 private:
  bool open_locked();
  const SinkTarget target_;
  const int64_t pid_;
  std::mutex mu_;
  int fd_ = -1;         // mu_
  bool dead_ = false;   // mu_
  std::atomic<uint64_t> unsent_bytes_{0};
};

}  // namespace edo::capture
