#include "tracer_config.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#ifndef EDO_TOOL_VERSION
#define EDO_TOOL_VERSION "0.0.0"
#endif

namespace edo::capture {
namespace {

std::string read_cmdline() {
  int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 && s.size() < (1u << 16)) s.append(buf, size_t(n));
  ::close(fd);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  for (char& c : s)
    if (c == '\0') c = ' ';
  return s;
}

std::optional<int64_t> env_int(const char* name) {
  const char* v = getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  long long x = strtoll(v, &end, 10);
  if (*end) return std::nullopt;
  return x;
}

// True when `path` names this library (libedo_trace.so), whatever the spelling.
bool is_this_library(const char* path) {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&is_this_library), &info) || !info.dli_fname) return false;
  char a[PATH_MAX], b[PATH_MAX];
  return realpath(path, a) && realpath(info.dli_fname, b) && std::string(a) == b;
}

}  // namespace

stats::StatsConfig stats_config_of(const Config& c) {
  stats::StatsConfig s;
  s.exact_rows_limit = c.exact_rows;
  s.top_k = uint32_t(c.top_k);
  s.track_lru = c.lru;
  return s;
}

SinkTarget sink_target_of(const Config& c) { return SinkTarget{c.channel, c.output, c.verbose, c.unsent}; }

wire::Hello make_hello(const Config& c, bool async, const SessionIdentity& id) {
  wire::Hello h;
  h.pid = id.pid;
  h.ppid = id.ppid;
  h.rank = env_int("RANK");
  h.local_rank = env_int("LOCAL_RANK");
  h.start_unix_ns = id.start_unix_ns;
  // The job identity a launcher gives each rank (torchrun, or a launcher that sets the same
  // variables): `edo merge` tells one job's recordings from another's by it.
  if (const char* v = getenv("TORCHELASTIC_RUN_ID")) h.job_id = v;
  const char* addr = getenv("MASTER_ADDR");
  const char* port = getenv("MASTER_PORT");
  if (addr && *addr && port && *port) h.master = std::string(addr) + ":" + port;
  h.world_size = env_int("WORLD_SIZE");
  h.group_rank = env_int("GROUP_RANK");
  h.local_world_size = env_int("LOCAL_WORLD_SIZE");
  // EDO_HOSTNAME names the node instead of gethostname(): several "nodes" on one machine (the
  // multi-node test), or a name the user prefers to the host's.
  const char* override_host = getenv("EDO_HOSTNAME");
  if (override_host && *override_host) {
    h.host = override_host;
  } else {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    h.host = host;
  }
  h.command = read_cmdline();
  h.tool_version = EDO_TOOL_VERSION;
  h.run_id = c.run_id;
  h.settings = {{"EDO_FLUSH_MS", std::to_string(c.flush_ms)},
                {"EDO_EXACT_ROWS", std::to_string(c.exact_rows)},
                {"EDO_TOPK", std::to_string(c.top_k)},
                {"EDO_MAX_BUFFER_MB", std::to_string(c.max_buffer_mb)},
                {"EDO_MAX_EVENTS", std::to_string(c.max_events)},
                {"EDO_MAX_DEVICE_MB", std::to_string(c.max_device_mb)},
                {"EDO_WINDOW_STEPS", std::to_string(c.window_steps)},
                {"EDO_ASYNC", async ? "1" : "0"},
                {"EDO_LRU", c.lru ? "1" : "0"},
                {"EDO_CUDA_CAPTURE", c.cuda ? "1" : "0"},
                {"EDO_WEIGHTS", c.weights ? "1" : "0"},
                {"EDO_WEIGHT_ROWS", std::to_string(c.weight_rows)}};
  // Whether NVTX ranges could be recorded: another tool's NVTX injection is named.
  const char* nvtx = getenv("NVTX_INJECTION64_PATH");
  if (nvtx && *nvtx && !is_this_library(nvtx)) h.settings.emplace_back("NVTX_INJECTION64_PATH", nvtx);
  return h;
}

}  // namespace edo::capture
