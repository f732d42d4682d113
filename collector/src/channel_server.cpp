#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "edo/collector/collector.h"

namespace edo::collector {
namespace {

// The process at the other end of a connection (its credentials, taken by the kernel at
// connect()), and its command line while it still runs: what the recording says of a process
// whose stream ends before its first flush (ProfileBuilder::close_stream).
ProfileBuilder::Peer peer_of(int fd) {
  ProfileBuilder::Peer p;
  ucred cred{};
  socklen_t len = sizeof cred;
  // edo itself is never a traced process (a test's in-process fake job): no peer to speak of.
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid <= 0 || cred.pid == ::getpid()) return p;
  p.pid = cred.pid;
  std::ifstream stat("/proc/" + std::to_string(cred.pid) + "/stat");
  std::string line;
  if (std::getline(stat, line) && line.rfind(')') != std::string::npos && line.rfind(')') + 2 < line.size()) {
    std::istringstream rest(line.substr(line.rfind(')') + 2));  // "state ppid ..." after "pid (comm)"
    char state = 0;
    long long ppid = 0;
    if (rest >> state >> ppid) p.ppid = ppid;
  }
  std::ifstream in("/proc/" + std::to_string(cred.pid) + "/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(in, arg, '\0')) p.command += (p.command.empty() ? "" : " ") + arg;
  // The node's name as the tracer gives it (EDO_HOSTNAME, which the job inherits from edo).
  const char* named = std::getenv("EDO_HOSTNAME");
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  p.host = named && *named ? named : host;
  return p;
}

// Whether process `pid` looks alive now: it exists, is no zombie, is not exiting (PF_EXITING on
// its thread-group leader) and has no SIGKILL pending on its leader (a group exit, by a fatal
// signal or exit_group(), adds SIGKILL to every other thread's pending set: kernel/signal.c
// zap_other_threads). /proc/PID/stat: "pid (comm) state ppid ... flags", flags the 9th field;
// /proc/PID/status: "SigPnd:" the leader's own pending signals, hex, bit 8 = SIGKILL.
bool looks_alive(int64_t pid) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  std::istringstream rest(line.substr(close + 2));
  char state = 0;
  long long ppid, pgrp, sid, tty, tpgid;
  unsigned long long flags = 0;
  if (!(rest >> state >> ppid >> pgrp >> sid >> tty >> tpgid >> flags)) return false;
  constexpr unsigned long long kPfExiting = 0x4;
  if (state == 'Z' || state == 'X' || state == 'x' || (flags & kPfExiting)) return false;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  while (std::getline(status, line))
    if (line.rfind("SigPnd:", 0) == 0) return !(std::strtoull(line.c_str() + 7, nullptr, 16) & (1ull << (SIGKILL - 1)));
  return true;
}

// Whether process `pid` still runs after its connection closed (connection_lost), or ended
// (ended_without_final_flush). A dying process tears its threads down one by one, and the
// tracer keeps its connection on a thread with a descriptor table of its own
// (profiler/capture/src/sink/own_fd_thread.h): that thread can close it before the leader shows any
// sign of dying. So a process that looks alive is looked at again for 50 ms (a process that
// truly runs on costs the collector that once per connection; one that said goodbye is not
// looked at: ProfileBuilder asks only for a session without its Goodbye).
bool still_runs(int64_t pid) {
  for (int i = 0; i < 25; ++i) {
    if (!looks_alive(pid)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return looks_alive(pid);
}

}  // namespace

ChannelServer::ChannelServer() {
  const char* tmp = getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/edo-record.XXXXXX";
  if (templ.size() > 90) templ = "/tmp/edo-record.XXXXXX";  // sun_path is short
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error(std::string("cannot create a private temporary directory: ") + std::strerror(errno));
  dir_ = buf.data();
  path_ = dir_ + "/channel";
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) throw std::runtime_error(std::string("cannot create a socket: ") + std::strerror(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 || ::listen(listen_fd_, 128) < 0) {
    int e = errno;
    ::close(listen_fd_);
    ::rmdir(dir_.c_str());
    throw std::runtime_error("cannot listen on " + path_ + ": " + std::strerror(e));
  }
}

ChannelServer::~ChannelServer() {
  for (auto& c : conns_) ::close(c.fd);
  stop_listening();
  ::unlink(path_.c_str());
  ::rmdir(dir_.c_str());
}

void ChannelServer::stop_listening() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

void ChannelServer::accept_pending(ProfileBuilder& b) {
  if (listen_fd_ < 0) return;
  while (true) {  // the listening socket is non-blocking: stops at EAGAIN
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) break;
    ProfileBuilder::Peer peer = peer_of(fd);
    const int64_t pid = peer.pid;
    conns_.push_back({fd, b.open_stream("connection " + std::to_string(++accepted_), std::move(peer)), pid});
  }
}

size_t ChannelServer::request_flush() {
  size_t asked = 0;
  const char req = 'F';  // edo::capture::kFlushRequestByte
  for (auto& c : conns_) asked += ::send(c.fd, &req, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1;
  return asked;
}

bool ChannelServer::poll_once(ProfileBuilder& b, int timeout_ms) {
  std::vector<pollfd> fds;
  if (listen_fd_ >= 0) fds.push_back({listen_fd_, POLLIN, 0});
  for (auto& c : conns_) fds.push_back({c.fd, POLLIN, 0});
  int r = ::poll(fds.data(), fds.size(), timeout_ms);
  if (r <= 0) return false;
  bool any = false;
  size_t i = 0;
  if (listen_fd_ >= 0) {
    if (fds[0].revents & POLLIN) {
      const size_t before = conns_.size();
      accept_pending(b);
      any = conns_.size() != before;
    }
    i = 1;
  }
  std::vector<Conn> keep;
  char buf[1 << 16];
  for (size_t k = 0; k < conns_.size(); ++k, ++i) {
    Conn c = conns_[k];
    bool closed = false;
    if (i < fds.size() && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
      // Read what is there now (bounded, so one busy writer cannot starve the others).
      for (int rounds = 0; rounds < 64; ++rounds) {
        ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
          b.feed(c.stream, buf, size_t(n));
          any = true;
          continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) closed = true;
        break;
      }
    }
    if (closed) {
      ::close(c.fd);
      b.close_stream(c.stream, [pid = c.pid] { return still_runs(pid); });
      any = true;
    } else {
      keep.push_back(c);
    }
  }
  conns_.swap(keep);
  return any;
}

}  // namespace edo::collector
