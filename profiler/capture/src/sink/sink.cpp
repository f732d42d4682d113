#include "sink.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
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
namespace {

// Still the descriptor we opened: same device, inode and type, and close-on-exec as we made
// it. fstat() on a closed number fails: not ours either.
bool same_descriptor(int fd, dev_t dev, ino_t ino, mode_t type) {
  if (fd < 0) return false;
  struct stat st{};
  if (::fstat(fd, &st) != 0) return false;
  if (st.st_dev != dev || st.st_ino != ino || (st.st_mode & S_IFMT) != type) return false;
  const int flags = ::fcntl(fd, F_GETFD);
  return flags >= 0 && (flags & FD_CLOEXEC);
}

// Moves a descriptor we just opened (`mine`: what fstat() said of it then) to a high number,
// close-on-exec, out of the way of a job that closes every fd >= 3 and then opens its own:
// those get the lowest free numbers (3, 4, ...), never ours. Below RLIMIT_NOFILE: kHighFd, or
// 3/4 of a smaller limit. open() and socket() can only give the lowest free number, for a
// moment: a job thread that dup2()s onto that very number in that moment replaces ours (as it
// would replace any library's), so each number is checked before it is kept or closed, and one
// that holds something else is left alone: the job's. Returns the number to keep (-1: none).
int move_high(int fd, const struct stat& mine) {
  const mode_t type = mine.st_mode & S_IFMT;
  int base = kHighFd;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur <= rlim_t(kHighFd) + 8)
    base = int(rl.rlim_cur) * 3 / 4;
  if (base <= fd) return fd;
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, base);
  if (high < 0) return same_descriptor(fd, mine.st_dev, mine.st_ino, type) ? fd : -1;
  if (!same_descriptor(high, mine.st_dev, mine.st_ino, type)) {
    // `fd` still ours: the job took `high` the moment it was made; it is the job's. `fd` not
    // ours either: the job replaced it before it was copied, and `high` is our copy of the
    // job's descriptor, which must not keep the job's file or pipe open: closed.
    if (same_descriptor(fd, mine.st_dev, mine.st_ino, type)) return fd;
    ::close(high);
    return -1;
  }
  if (same_descriptor(fd, mine.st_dev, mine.st_ino, type)) ::close(fd);
  return high;
}

}  // namespace

Sink::~Sink() {
  std::lock_guard<std::mutex> lk(mu_);
  with_descriptors_locked([this] {
    close_locked();
    return true;
  });
}

void Sink::say_now(const std::string& line) { tracer_log(line); }

void Sink::close_inherited() {
  // No lock: called in the single-threaded fork child, where a parent thread that held it
  // does not exist. A descriptor in the parent's own table (own_fd_thread.h) was never in
  // this process's table: forgotten. One in the shared table was copied here: closed.
  const bool own = io_.own_table();
  io_.forget();
  if (own) fd_ = Held{};
  else close_locked();
  dead_ = true;
}

std::string Sink::lost_reason() const {
  std::lock_guard<std::mutex> lk(mu_);
  return reason_;
}

bool Sink::spilling() const {
  std::lock_guard<std::mutex> lk(mu_);
  return mode_ == Mode::kSpill;
}

std::string Sink::spill_path() const {
  std::lock_guard<std::mutex> lk(mu_);
  return mode_ == Mode::kSpill ? path_ : std::string();
}

std::string Sink::gone_reason() const {
  std::lock_guard<std::mutex> lk(mu_);
  return gone_;
}

void Sink::lose_locked(size_t bytes, const std::string& why) {
  lost_writes_.fetch_add(1);
  lost_bytes_.fetch_add(bytes);
  if (reason_.empty()) reason_ = why;
}

void Sink::close_locked() {
  // A number that holds something else now is the job's: forgotten, never closed.
  if (same_descriptor(fd_.fd, fd_.dev, fd_.ino, fd_.type)) ::close(fd_.fd);
  fd_ = Held{};
}

bool Sink::ours_locked() {
  if (same_descriptor(fd_.fd, fd_.dev, fd_.ino, fd_.type)) return true;
  const Held was = fd_;
  fd_ = Held{};  // not closed: see close_locked()
  if (was.fd < 0) return false;
  if (mode_ == Mode::kChannel) {
    channel_gone_locked("the job closed the tracer's connection to the collector at " + target_.channel +
                        " (descriptor " + std::to_string(was.fd) + ")");
    return false;
  }
  // Our file, by its path: opened again, appending. Another file there now (removed or
  // replaced under the job) starts a new stream, which needs the session's resay.
  if (!open_file_locked(path_, mode_ == Mode::kSpill)) return false;
  if (fd_.dev != was.dev || fd_.ino != was.ino) resay_ = true;
  return true;
}

void Sink::channel_gone_locked(const std::string& why) {
  if (gone_.empty()) gone_ = why;
  if (target_.unsent.empty()) {
    dead_ = true;
    if (target_.verbose) say_locked("lost the collector (" + why + "); the job goes on untraced");
    return;
  }
  mode_ = Mode::kSpill;
  path_ = target_.unsent + "." + std::to_string(pid_);
  resay_ = true;
  if (target_.verbose) say_locked("lost the collector (" + why + "); what follows goes to " + path_);
}

bool Sink::connect_locked() {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    channel_gone_locked(std::string("cannot create a socket: ") + std::strerror(errno));
    return false;
  }
  struct stat mine{};
  if (::fstat(fd, &mine) != 0 || !S_ISSOCK(mine.st_mode)) {  // the job replaced it already
    channel_gone_locked("cannot reach the collector at " + target_.channel + " (its socket was taken by the job)");
    return false;
  }
  fd = move_high(fd, mine);
  if (fd < 0) {
    channel_gone_locked("cannot reach the collector at " + target_.channel + " (its socket was taken by the job)");
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
    if (same_descriptor(fd, mine.st_dev, mine.st_ino, S_IFSOCK)) ::close(fd);
    channel_gone_locked("cannot reach the collector at " + target_.channel + " (" + std::strerror(err) + ")");
    return false;
  }
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  fd_ = Held{fd, mine.st_dev, mine.st_ino, S_IFSOCK};
  return true;
}

bool Sink::open_file_locked(const std::string& path, bool after_channel) {
  int fd = -1;
  struct stat st{}, at{};
  // What we opened is the file at `path`; a number the job replaced in the meantime (move_high)
  // holds another file, never closed (the job's): then try again.
  for (int attempt = 0; attempt < 3 && fd < 0; ++attempt) {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND, 0644);
    if (fd < 0) break;
    if (::fstat(fd, &st) != 0 || ::stat(path.c_str(), &at) != 0 || st.st_dev != at.st_dev || st.st_ino != at.st_ino)
      fd = -1;
    else
      fd = move_high(fd, st);
    if (fd < 0) errno = EBADF;
  }
  if (fd < 0) {
    dead_ = true;
    const std::string why = "cannot write " + path + ": " + std::strerror(errno);
    if (reason_.empty()) reason_ = after_channel ? gone_ + ", and " + why : why;
    say_locked(why + "; tracing data of this process is dropped");
    return false;
  }
  fd_ = Held{fd, st.st_dev, st.st_ino, mode_t(st.st_mode & S_IFMT)};
  return true;
}

bool Sink::open_locked() {
  // At most: a channel found gone, then its unsent file opened.
  for (int step = 0; step < 3; ++step) {
    if (dead_) return false;
    if (fd_.fd >= 0) {
      if (ours_locked()) return true;
      continue;  // a channel gone (now the unsent file, or dead), or a file that could not be opened again
    }
    if (mode_ == Mode::kChannel) {
      if (connect_locked()) return true;
      continue;
    }
    if (mode_ == Mode::kFile) {
      // File mode: the first process owns <path>; others write <path>.<pid>.
      path_ = target_.output;
      const char* owner = getenv("EDO_OUTPUT_OWNER");
      if (owner && std::to_string(pid_) != owner) path_ += "." + std::to_string(pid_);
    }
    return open_file_locked(path_, mode_ == Mode::kSpill);
  }
  return false;
}

void Sink::connect_early() {
  if (connect_tried_.load(std::memory_order_relaxed) || target_.channel.empty()) return;
  std::lock_guard<std::mutex> lk(mu_);
  if (mode_ == Mode::kChannel && fd_.fd < 0 && !dead_)
    with_descriptors_locked([this] {
      return connect_locked();  // a failure is kept (unsent file or dead_) and dealt with at the first write, as before
    });
  connect_tried_.store(true);
}

bool Sink::write(const std::string& data, const Resay& resay) {
  if (data.empty()) return true;
  std::unique_lock<std::mutex> lk(mu_);
  // At most: the channel fails, then the unsent file takes the frames (with the resay, which
  // may be asked for again if the stream changed while it was made).
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (!with_descriptors_locked([this] { return open_locked(); })) break;
    std::string framed;
    const std::string* out = &data;
    if (resay_ && resay) {
      const Mode m = mode_;
      const std::string at = path_;
      lk.unlock();  // the resay takes the session's locks, which come before the sink's
      auto [before, after] = resay(m == Mode::kSpill);
      lk.lock();
      if (!with_descriptors_locked([this] { return open_locked(); }) || mode_ != m || path_ != at || !resay_) continue;
      framed = before + data + after;
      out = &framed;
    }
    const Mode m = mode_;
    if (with_descriptors_locked([&] { return m == Mode::kChannel ? send_locked(*out) : write_file_locked(*out); })) {
      resay_ = false;
      if (m == Mode::kSpill) {
        kept_writes_.fetch_add(1);
        kept_bytes_.fetch_add(data.size());
      }
      return true;
    }
    // The channel failed: its frames go to the unsent file, when there is one. A file whose
    // number the job took mid-write: opened again by its path, and the frames written again.
    if (m == Mode::kChannel && mode_ == Mode::kSpill) continue;
    if (m != Mode::kChannel && taken_) continue;
    lose_locked(data.size(), m == Mode::kChannel ? gone_ : last_error_);
    return false;
  }
  lose_locked(data.size(), reason_.empty() ? gone_ : reason_);
  return false;
}

bool Sink::send_locked(const std::string& data) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    if (!same_descriptor(fd_.fd, fd_.dev, fd_.ino, fd_.type)) {
      ours_locked();  // the job took the number: the channel is gone (the number is not closed)
      return false;
    }
    ssize_t n = ::send(fd_.fd, p, left, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EPIPE;
      close_locked();
      channel_gone_locked("the collector at " + target_.channel + " went away (" + std::strerror(err) + ")");
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
  const Held held = fd_;
  const off_t start = ::fstat(held.fd, &st) == 0 ? st.st_size : -1;
  const char* p = data.data();
  size_t left = data.size();
  taken_ = false;
  while (left > 0) {
    ssize_t n = -1;
    if (!same_descriptor(held.fd, held.dev, held.ino, held.type)) {
      taken_ = true;  // the job closed or took the number mid-write: never written again
      errno = EBADF;
    } else {
      n = ::write(held.fd, p, left);
      if (n < 0 && errno == EINTR) continue;
    }
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      // Cut a partial frame off, so that the next flush continues a clean file: through our
      // descriptor while it is ours, else through the path while it names the same file.
      struct stat at{};
      if (start >= 0 && same_descriptor(held.fd, held.dev, held.ino, held.type)) {
        if (ftruncate(held.fd, start) != 0) {
          // The file keeps a partial frame: `edo import` reports it with its offset and reads on.
        }
      } else if (start >= 0 && ::stat(path_.c_str(), &at) == 0 && at.st_dev == held.dev && at.st_ino == held.ino) {
        if (truncate(path_.c_str(), start) != 0) {
        }
      }
      last_error_ = "cannot write " + path_ + ": " + std::strerror(err);
      if (mode_ == Mode::kSpill) last_error_ = gone_ + ", and " + last_error_;
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
  if (mode_ != Mode::kChannel || fd_.fd < 0) return false;
  return with_descriptors_locked([this] { return flush_requested_locked(); });
}

bool Sink::flush_requested_locked() {
  if (!ours_locked()) return false;  // the job closed or took our number: the channel is gone
  bool asked = false;
  char buf[64];
  while (true) {
    ssize_t n = ::recv(fd_.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      for (ssize_t i = 0; i < n; ++i) asked |= buf[i] == kFlushRequestByte;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      // The collector closed the connection (or it broke): nothing sent from now on can
      // arrive; the unsent file takes the rest, when there is one.
      const std::string why = n == 0 ? "the collector at " + target_.channel + " closed the connection"
                                     : "the collector at " + target_.channel + " went away (" + std::strerror(errno) + ")";
      close_locked();
      channel_gone_locked(why);
      if (reason_.empty() && dead_) reason_ = why;
    }
    break;
  }
  return asked;
}

}  // namespace edo::capture
