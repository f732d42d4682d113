#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "edo/collector/collector.h"

namespace edo::collector {

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
    conns_.push_back({fd, b.open_stream("connection " + std::to_string(++accepted_))});
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
      b.close_stream(c.stream);
      any = true;
    } else {
      keep.push_back(c);
    }
  }
  conns_.swap(keep);
  return any;
}

}  // namespace edo::collector
