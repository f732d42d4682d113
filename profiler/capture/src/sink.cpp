#include "sink.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tracer.h"

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

bool Sink::open_locked() {
  if (fd_ >= 0) return true;
  if (dead_) return false;
  if (!target_.channel.empty()) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      dead_ = true;
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
      if (target_.verbose) tracer_log("cannot reach the collector at " + target_.channel + ": " + std::strerror(err));
      return false;
    }
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    fd_ = fd;
    return true;
  }
  // File mode: the first process owns <path>; others write <path>.<pid>.
  std::string path = target_.output;
  const char* owner = getenv("EDO_OUTPUT_OWNER");
  if (owner && std::to_string(pid_) != owner) path += "." + std::to_string(pid_);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND, 0644);
  if (fd < 0) {
    dead_ = true;
    tracer_log("cannot write " + path + ": " + std::strerror(errno) + "; tracing data of this process is dropped");
    return false;
  }
  fd_ = fd;
  return true;
}

void Sink::write(const std::string& data) {
  if (data.empty()) return;
  std::lock_guard<std::mutex> lk(mu_);
  if (!open_locked()) {
    unsent_bytes_.fetch_add(data.size());
    return;
  }
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = target_.channel.empty() ? ::write(fd_, p, left) : ::send(fd_, p, left, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd_);
      fd_ = -1;
      dead_ = true;
      if (target_.verbose) tracer_log("lost the collector; the job goes on untraced");
      return;
    }
    p += n;
    left -= size_t(n);
  }
}

}  // namespace edo::capture
