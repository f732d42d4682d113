#include "sink.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "quiet_fsize.h"
#include "tracer_log.h"

namespace edo::capture {

Sink::~Sink() {
  if (fd_ >= 0) ::close(fd_);
}

void Sink::close_inherited() {
  // No lock: called in the single-threaded fork child, where a parent thread that held it
  // does not exist.
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  dead_ = true;
}

std::string Sink::lost_reason() const {
  std::lock_guard<std::mutex> lk(mu_);
  return reason_;
}

void Sink::lose_locked(size_t bytes, const std::string& why) {
  lost_writes_.fetch_add(1);
  lost_bytes_.fetch_add(bytes);
  if (reason_.empty()) reason_ = why;
}

bool Sink::open_locked() {
  if (fd_ >= 0) return true;
  if (dead_) return false;
  if (!target_.channel.empty()) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      dead_ = true;
      reason_ = std::string("cannot create a socket: ") + std::strerror(errno);
      return false;
    }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, target_.channel.c_str(), sizeof(addr.sun_path) - 1);
    int r;
    do {
      r = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
      const int err = errno;
      ::close(fd);
      dead_ = true;
      reason_ = "cannot reach the collector at " + target_.channel + " (" + std::strerror(err) + ")";
      if (target_.verbose) tracer_log(reason_);
      return false;
    }
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    fd_ = fd;
    return true;
  }
  // File mode: the first process owns <path>; others write <path>.<pid>.
  path_ = target_.output;
  const char* owner = getenv("EDO_OUTPUT_OWNER");
  if (owner && std::to_string(pid_) != owner) path_ += "." + std::to_string(pid_);
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND, 0644);
  if (fd < 0) {
    dead_ = true;
    reason_ = "cannot write " + path_ + ": " + std::strerror(errno);
    tracer_log(reason_ + "; tracing data of this process is dropped");
    return false;
  }
  fd_ = fd;
  return true;
}

void Sink::connect_early() {
  if (connect_tried_.load(std::memory_order_relaxed) || target_.channel.empty()) return;
  std::lock_guard<std::mutex> lk(mu_);
  open_locked();  // a failure is kept (dead_, reason_) and counted at the first write, as before
  connect_tried_.store(true);
}

bool Sink::write(const std::string& data) {
  if (data.empty()) return true;
  std::lock_guard<std::mutex> lk(mu_);
  if (!open_locked()) {
    lose_locked(data.size(), reason_);
    return false;
  }
  return target_.channel.empty() ? write_file_locked(data) : send_locked(data);
}

bool Sink::send_locked(const std::string& data) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::send(fd_, p, left, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EPIPE;
      ::close(fd_);
      fd_ = -1;
      dead_ = true;
      lose_locked(data.size(), "the collector at " + target_.channel + " went away (" + std::strerror(err) + ")");
      if (target_.verbose) tracer_log("lost the collector; the job goes on untraced");
      return false;
    }
    p += n;
    left -= size_t(n);
  }
  return true;
}


bool Sink::write_file_locked(const std::string& data) {
  const int saved_errno = errno;
  QuietFileSizeSignal quiet;
  struct stat st{};
  const off_t start = ::fstat(fd_, &st) == 0 ? st.st_size : -1;
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      // Cut a partial frame off, so that the next flush continues a clean file.
      if (start >= 0 && ftruncate(fd_, start) != 0) {
        // The file keeps a partial frame: `edo import` reports it with its offset and reads on.
      }
      lose_locked(data.size(), "cannot write " + path_ + ": " + std::strerror(err));
      errno = saved_errno;
      return false;
    }
    p += n;
    left -= size_t(n);
  }
  errno = saved_errno;
  return true;
}

bool Sink::flush_requested() {
  std::lock_guard<std::mutex> lk(mu_);
  if (fd_ < 0 || target_.channel.empty()) return false;
  bool asked = false;
  char buf[64];
  while (true) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      for (ssize_t i = 0; i < n; ++i) asked |= buf[i] == kFlushRequestByte;
      continue;
    }
    if (n == 0) {
      // The collector closed the connection: nothing sent from now on can arrive.
      ::close(fd_);
      fd_ = -1;
      dead_ = true;
      if (reason_.empty()) reason_ = "the collector at " + target_.channel + " closed the connection";
    }
    break;
  }
  return asked;
}

}  // namespace edo::capture
