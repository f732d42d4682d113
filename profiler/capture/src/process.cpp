#include "process.h"

#include <time.h>
#include <unistd.h>

#include "events.h"
#include "tracer_log.h"
#include "tracer_config.h"

namespace edo::capture {
namespace {

Process* g_process = nullptr;
std::atomic<Session*> g_session{nullptr};

int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

uint64_t RangeHandles::start(const std::string& name, int64_t now) {
  std::lock_guard<std::mutex> lk(mu_);
  const uint64_t id = next_++;
  open_[id] = {name, now};
  return id;
}

bool RangeHandles::end(uint64_t id, std::string& name, int64_t& start) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = open_.find(id);
  if (it == open_.end()) return false;
  name = std::move(it->second.name);
  start = it->second.start;
  open_.erase(it);
  return true;
}

Process::Process(const Config& c)
    : cfg(c), active(c.active()), stats(stats_config_of(c)), async(c.async), registry(active) {}

Session* Process::new_session(bool quiet) const {
  SessionIdentity id;
  id.pid = getpid();
  id.ppid = getppid();
  id.start_unix_ns = realtime_ns();
  id.start_mono_ns = now_ns();
  return new Session(id, sink_target_of(cfg), stats, cfg.max_buffer_mb << 20, cfg.max_events, quiet,
                     cfg.max_memory_mb << 20);
}

Process* process() { return g_process; }
Session& session() { return *g_session.load(std::memory_order_acquire); }
void replace_session(Session* s) { g_session.store(s, std::memory_order_release); }

// Set once by the constructor (lifecycle.cpp).
void install_process(Process* p, Session* s) {
  g_session.store(s, std::memory_order_release);
  g_process = p;
}

}  // namespace edo::capture
