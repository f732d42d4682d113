// The in-process tracer: table registry, index ingest (inline or on a background thread),
// periodic flush of deltas as wire frames to `edo record`'s socket or an EDO_OUTPUT file,
// and the process-lifecycle plumbing (fork, exec, exit, SIGTERM/SIGINT).
//
// Lock order (never take an earlier lock while holding a later one):
//   flush_mu -> reg_mu -> ing_mu -> q_mu -> mem_mu -> kern_mu -> nvtx_mu -> sink_mu
#include "tracer.h"

#include "edo/dtype.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "edo/edo.h"
#include "edo/stats/table_stats.h"
#include "edo/wire/wire.h"

#ifndef EDO_TOOL_VERSION
#define EDO_TOOL_VERSION "0.0.0"
#endif

extern char** environ;

namespace edo::capture {
namespace {

constexpr size_t kMaxTables = 1 << 14;
constexpr size_t kMaxEventsPerFrame = 1 << 16;

struct Table {
  uint32_t id = 0;
  std::string name;
  uint64_t base = 0, rows = 0, bytes = 0;
  uint32_t dim = 0;
  uint8_t dtype = 0, device = 0;
  bool sent = false;                            // reg_mu
  std::map<std::string, uint64_t> extra;        // reg_mu
  bool extra_dirty = false;                     // reg_mu
  std::unique_ptr<stats::TableIngestor> ing;    // ing_mu
  bool has_pending = false;                     // ing_mu
};

struct Batch {
  int64_t table = -1;  // -1: close-window marker
  int type = 0;
  uint64_t count = 0;
  size_t bytes = 0;
  size_t capacity = 0;
  std::unique_ptr<char[]> data;
};

struct RangeTotals {
  std::string name;
  std::atomic<uint64_t> count{0}, total_ns{0}, lookups{0}, alloc_bytes{0};
};

struct KernelTotals {
  uint64_t launches = 0, total_ns = 0;
  std::set<std::string> tables;
};

struct OpenRange {
  RangeTotals* r;
  int64_t start;
};

struct State {
  Config cfg;
  bool active = false;
  stats::StatsConfig stats_cfg;

  // session identity
  std::atomic<int64_t> pid{0};
  int64_t ppid = 0;
  int64_t start_unix_ns = 0;
  int64_t start_mono_ns = 0;
  bool session_open = false;   // flush_mu
  bool goodbye_sent = false;   // flush_mu

  std::mutex flush_mu, reg_mu, ing_mu, q_mu, mem_mu, kern_mu, nvtx_mu, sink_mu;
  // Held by the background thread for each round of work (draining, polling, flushing), so
  // that fork() can wait until it is back to waiting: a fork while that thread is inside
  // malloc leaves the child with the allocator's lock taken if the allocator has no fork
  // handler of its own (AddressSanitizer's does not: a forked worker hung at exit).
  std::mutex bg_work_mu;
  std::atomic<bool> bg_entered{false};  // the background thread has reached bg_main()

  // registry
  std::atomic<Table*> slots[kMaxTables] = {};
  std::atomic<uint32_t> ntables{0};
  std::vector<std::pair<uint32_t, uint32_t>> ties;  // reg_mu
  size_t ties_sent = 0;                             // reg_mu
  std::shared_ptr<const wire::AddressIndex> addr_index;  // reg_mu (copy under lock)

  // ingest queue
  std::condition_variable* cv = new std::condition_variable();  // replaced in a fork child
  std::vector<Batch*> queue;   // q_mu
  std::vector<Batch*> pool;    // q_mu
  uint64_t queued_bytes = 0;   // q_mu
  bool stop = false;           // q_mu
  bool flush_req = false;      // q_mu

  // counters
  std::atomic<uint64_t> steps{0};
  uint64_t steps_sent = 0;     // flush_mu
  std::map<std::string, uint64_t> drops;  // mem_mu
  bool drops_dirty = false;               // mem_mu
  std::vector<wire::MemEvent> mem_events; // mem_mu
  std::vector<wire::Note> notes;          // mem_mu
  std::map<std::string, KernelTotals> kernels;  // kern_mu
  bool kernels_dirty = false;                    // kern_mu
  std::unordered_map<std::string, RangeTotals*> ranges;  // nvtx_mu
  std::unordered_map<uint64_t, OpenRange> started;       // nvtx_mu
  uint64_t next_range_id = 1;                            // nvtx_mu
  std::atomic<bool> ranges_dirty{false};

  // sink
  int fd = -1;                 // sink_mu
  bool sink_dead = false;      // sink_mu
  bool sink_tried = false;     // sink_mu

  // background thread
  std::thread* bg = nullptr;
  std::atomic<bool> bg_running{false};
  std::atomic<bool> need_start{false};
  std::mutex start_mu;

  // signals
  struct sigaction prev[65] = {};
  std::atomic<uint64_t> sig_req{0}, sig_done{0};
  std::atomic<int> sig_final{0};
  std::atomic<bool> exited{false};
  std::atomic<uint64_t> unsent_bytes{0};
  // A forked child that has only inherited the parent's registry has nothing to say yet:
  // it gets a session once it registers, reads, steps, opens a range or allocates.
  std::atomic<bool> child_quiet{false};
};

State* g = nullptr;

thread_local std::vector<OpenRange>* tl_ranges = nullptr;

int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void write_stderr(const std::string& s) {
  std::string line = s;
  if (line.empty() || line.back() != '\n') line.push_back('\n');
  ssize_t r = ::write(2, line.data(), line.size());
  (void)r;
}

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

// Bytes per element of an edo_dtype code (the one vocabulary in core's edo/dtype.h).
static_assert(int(EDO_F32) == int(DType::Fp32) && int(EDO_F16) == int(DType::Fp16) && int(EDO_BF16) == int(DType::Bf16) &&
                  int(EDO_I8) == int(DType::Int8) && int(EDO_U8) == int(DType::Uint8) && int(EDO_F8E4M3) == int(DType::Fp8E4M3),
              "edo_dtype (edo.h) and edo::DType (edo/dtype.h) must keep the same codes");
uint32_t elem_size(int dtype) {
  const auto t = dtype_from_code(static_cast<unsigned>(dtype));
  return t ? dtype_bytes(*t) : 1;
}

// ---- sink --------------------------------------------------------------------------------
bool open_sink_locked() {
  if (g->fd >= 0) return true;
  if (g->sink_dead) return false;
  g->sink_tried = true;
  const Config& c = g->cfg;
  if (!c.channel.empty()) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) { g->sink_dead = true; return false; }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, c.channel.c_str(), sizeof(addr.sun_path) - 1);
    int r;
    do { r = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr); } while (r < 0 && errno == EINTR);
    if (r < 0) {
      ::close(fd);
      g->sink_dead = true;
      if (c.verbose) write_stderr("edo: cannot reach the collector at " + c.channel + ": " + std::strerror(errno));
      return false;
    }
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    g->fd = fd;
    return true;
  }
  // File mode: the first process owns <path>; others write <path>.<pid>.
  const int64_t pid = g->pid.load();
  std::string path = c.output;
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND;
  const char* owner = getenv("EDO_OUTPUT_OWNER");
  if (owner && std::to_string(pid) != owner) path += "." + std::to_string(pid);
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    g->sink_dead = true;
    write_stderr("edo: cannot write " + path + ": " + std::strerror(errno) + "; tracing data of this process is dropped");
    return false;
  }
  g->fd = fd;
  return true;
}

void write_sink(const std::string& data) {
  if (data.empty()) return;
  std::lock_guard<std::mutex> lk(g->sink_mu);
  if (!open_sink_locked()) {
    g->unsent_bytes.fetch_add(data.size());
    return;
  }
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = g->cfg.channel.empty() ? ::write(g->fd, p, left) : ::send(g->fd, p, left, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(g->fd);
      g->fd = -1;
      g->sink_dead = true;
      if (g->cfg.verbose) write_stderr("edo: lost the collector; the job goes on untraced");
      return;
    }
    p += n;
    left -= size_t(n);
  }
}

// ---- ingest --------------------------------------------------------------------------------
Table* table_of(int64_t h) {
  if (!g || h < 0 || uint64_t(h) >= kMaxTables) return nullptr;
  return g->slots[h].load(std::memory_order_acquire);
}

void ingest_locked(Table* t, const void* p, uint64_t n, int type) {
  if (!t->ing) t->ing = std::make_unique<stats::TableIngestor>(t->rows, g->stats_cfg);
  if (type == EDO_I64) t->ing->add(static_cast<const int64_t*>(p), size_t(n));
  else t->ing->add(static_cast<const int32_t*>(p), size_t(n));
  t->has_pending = true;
}

void close_windows_locked() {
  const uint32_t n = g->ntables.load();
  for (uint32_t i = 0; i < n; ++i) {
    Table* t = g->slots[i].load();
    if (t && t->ing && t->has_pending) t->ing->close_window();
  }
}

void drain_queue() {
  std::vector<Batch*> work;
  {
    std::lock_guard<std::mutex> lk(g->q_mu);
    work.swap(g->queue);
  }
  if (work.empty()) return;
  uint64_t freed = 0;
  {
    std::lock_guard<std::mutex> lk(g->ing_mu);
    for (Batch* b : work) {
      if (b->table < 0) close_windows_locked();
      else if (Table* t = table_of(b->table)) ingest_locked(t, b->data.get(), b->count, b->type);
      freed += b->bytes;
    }
  }
  std::lock_guard<std::mutex> lk(g->q_mu);
  g->queued_bytes -= std::min(g->queued_bytes, freed);
  for (Batch* b : work) {
    if (g->pool.size() < 16) g->pool.push_back(b);
    else delete b;
  }
}

void ensure_bg();

// ---- flush ---------------------------------------------------------------------------------
bool anything_to_say() {
  if ((g->ntables.load() > 0 && !g->child_quiet.load()) || g->steps.load() > 0 || g->ranges_dirty.load()) return true;
  std::lock_guard<std::mutex> lk(g->mem_mu);
  if (!g->mem_events.empty() || !g->notes.empty() || g->drops_dirty) return true;
  std::lock_guard<std::mutex> lk2(g->kern_mu);
  return g->kernels_dirty;
}

wire::Hello make_hello() {
  wire::Hello h;
  h.pid = g->pid.load();
  h.ppid = g->ppid;
  h.rank = env_int("RANK");
  h.local_rank = env_int("LOCAL_RANK");
  h.start_unix_ns = g->start_unix_ns;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  h.host = host;
  h.command = read_cmdline();
  h.tool_version = EDO_TOOL_VERSION;
  const Config& c = g->cfg;
  h.settings = {{"EDO_FLUSH_MS", std::to_string(c.flush_ms)},
                {"EDO_EXACT_ROWS", std::to_string(c.exact_rows)},
                {"EDO_TOPK", std::to_string(c.top_k)},
                {"EDO_MAX_BUFFER_MB", std::to_string(c.max_buffer_mb)},
                {"EDO_MAX_EVENTS", std::to_string(c.max_events)},
                {"EDO_WINDOW_STEPS", std::to_string(c.window_steps)},
                {"EDO_ASYNC", c.async ? "1" : "0"},
                {"EDO_LRU", c.lru ? "1" : "0"},
                {"EDO_CUDA_CAPTURE", c.cuda ? "1" : "0"}};
  return h;
}

void flush_internal(bool final_goodbye, wire::EndReason reason, int code, bool force_open) {
  std::lock_guard<std::mutex> flk(g->flush_mu);
  if (g->goodbye_sent && final_goodbye) return;
  drain_queue();
  cuda_poll(final_goodbye);
  drain_queue();
  if (!g->session_open && !force_open && !anything_to_say()) return;
  std::string out;
  if (!g->session_open) {
    wire::encode(make_hello(), out);
    g->session_open = true;
  }
  const uint32_t n = g->ntables.load();
  {
    std::lock_guard<std::mutex> lk(g->reg_mu);
    for (uint32_t i = 0; i < n; ++i) {
      Table* t = g->slots[i].load();
      if (!t) continue;
      if (!t->sent) {
        wire::TableReg r;
        r.id = t->id; r.name = t->name; r.base = t->base; r.rows = t->rows; r.dim = t->dim;
        r.dtype = t->dtype; r.device = t->device; r.device_index = t->device == EDO_CUDA ? 0 : -1;
        wire::encode(r, out);
        t->sent = true;
      }
      if (t->extra_dirty) {
        for (auto& [kind, bytes] : t->extra) wire::encode(wire::ExtraBytes{t->id, kind, bytes}, out);
        t->extra_dirty = false;
      }
    }
    for (; g->ties_sent < g->ties.size(); ++g->ties_sent)
      wire::encode(wire::Tie{g->ties[g->ties_sent].first, g->ties[g->ties_sent].second}, out);
  }
  {
    std::lock_guard<std::mutex> lk(g->ing_mu);
    for (uint32_t i = 0; i < n; ++i) {
      Table* t = g->slots[i].load();
      if (!t || !t->ing || !t->has_pending) continue;
      if (g->cfg.window_steps == 0) t->ing->close_window();
      stats::TableAggregate d = t->ing->take_delta();
      t->has_pending = false;
      if (!d.empty()) wire::encode(wire::TableDelta{t->id, d.serialize()}, out);
    }
  }
  const uint64_t steps = g->steps.load();
  if (steps != g->steps_sent) {
    wire::encode(wire::Steps{steps}, out);
    g->steps_sent = steps;
  }
  {
    std::vector<wire::MemEvent> ev;
    std::vector<wire::Note> notes;
    wire::Dropped dropped;
    {
      std::lock_guard<std::mutex> lk(g->mem_mu);
      ev.swap(g->mem_events);
      notes.swap(g->notes);
      if (g->drops_dirty) {
        for (auto& [k, v] : g->drops) dropped.counters.emplace_back(k, v);
        g->drops_dirty = false;
      }
    }
    for (auto& nt : notes) wire::encode(nt, out);
    for (size_t i = 0; i < ev.size(); i += kMaxEventsPerFrame) {
      wire::MemoryEvents m;
      m.events.assign(ev.begin() + i, ev.begin() + std::min(ev.size(), i + kMaxEventsPerFrame));
      wire::encode(m, out);
    }
    if (!dropped.counters.empty()) wire::encode(dropped, out);
  }
  {
    std::lock_guard<std::mutex> lk(g->kern_mu);
    if (g->kernels_dirty) {
      wire::KernelStats ks;
      for (auto& [name, k] : g->kernels)
        ks.kernels.push_back({name, k.launches, k.total_ns, {k.tables.begin(), k.tables.end()}});
      wire::encode(ks, out);
      g->kernels_dirty = false;
    }
  }
  if (g->ranges_dirty.exchange(false)) {
    wire::RangeStats rs;
    std::lock_guard<std::mutex> lk(g->nvtx_mu);
    for (auto& [name, r] : g->ranges)
      if (r->count || r->lookups || r->alloc_bytes)
        rs.ranges.push_back({name, r->count.load(), r->total_ns.load(), r->lookups.load(), r->alloc_bytes.load()});
    wire::encode(rs, out);
  }
  if (final_goodbye) {
    wire::encode(wire::Goodbye{now_ns() - g->start_mono_ns, reason, code}, out);
    g->goodbye_sent = true;
  }
  write_sink(out);
}

// ---- background thread ---------------------------------------------------------------------
void bg_main() {
  g->bg_entered.store(true);  // thread start-up (allocations included) is over: see ensure_bg()
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  auto next_flush = std::chrono::steady_clock::now() + std::chrono::milliseconds(g->cfg.flush_ms);
  while (true) {
    bool stop = false, req = false;
    {
      std::unique_lock<std::mutex> lk(g->q_mu);
      auto until = std::min(next_flush, std::chrono::steady_clock::now() + std::chrono::milliseconds(20));
      g->cv->wait_until(lk, until, [] { return !g->queue.empty() || g->stop || g->flush_req; });
      stop = g->stop;
      req = g->flush_req;
      g->flush_req = false;
    }
    if (stop) break;
    std::lock_guard<std::mutex> work(g->bg_work_mu);
    drain_queue();
    cuda_poll(false);
    cupti_poll();
    const uint64_t sreq = g->sig_req.load();
    const bool sig = sreq != g->sig_done.load();
    if (req || sig || std::chrono::steady_clock::now() >= next_flush) {
      const int fin = sig ? g->sig_final.load() : 0;
      if (fin) {
        cupti_flush();
        flush_internal(true, wire::EndReason::kSignal, fin, false);
      } else {
        cupti_flush();
        flush_internal(false, wire::EndReason::kExit, 0, false);
      }
      if (sig) g->sig_done.store(sreq);
      next_flush = std::chrono::steady_clock::now() + std::chrono::milliseconds(g->cfg.flush_ms);
    }
  }
  g->bg_running.store(false);
}

void ensure_bg() {
  if (!g->need_start.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lk(g->start_mu);
  if (!g->need_start.load()) return;
  try {
    g->bg_entered.store(false);
    g->bg = new std::thread(bg_main);
    g->bg_running.store(true);
    // Wait (2 s at most) until the thread runs our code: a fork() while the new thread is
    // still being set up could copy an allocator lock in the taken state (see bg_work_mu).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!g->bg_entered.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  } catch (...) {
    g->cfg.async = false;  // no thread: ingest inline, flush at exit only
  }
  g->need_start.store(false);
}

void stop_bg() {
  if (!g->bg || !g->bg_running.load()) return;
  {
    std::lock_guard<std::mutex> lk(g->q_mu);
    g->stop = true;
  }
  g->cv->notify_all();
  if (g->bg->joinable() && g->bg->get_id() != std::this_thread::get_id()) g->bg->join();
  g->bg_running.store(false);
}

// ---- lifecycle -----------------------------------------------------------------------------
// Termination signals are held back while a final flush runs on the calling thread (exit,
// _exit, exec): a SIGTERM arriving then (multiprocessing's Pool.terminate() races the
// workers' own os._exit) would otherwise kill the process mid-write. Restored afterwards,
// so a pending signal is still delivered and the process still dies by it.
struct HoldSignals {
  sigset_t old;
  HoldSignals() {
    sigset_t s;
    sigemptyset(&s);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&s, sig);
    pthread_sigmask(SIG_BLOCK, &s, &old);
  }
  ~HoldSignals() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
};

void on_exit_handler() {
  if (!g || !g->active || g->exited.exchange(true)) return;
  if (g->pid.load() != getpid()) return;
  HoldSignals hold;
  stop_bg();
  cupti_flush();
  flush_internal(true, wire::EndReason::kExit, 0, false);
}

void on_signal(int sig, siginfo_t* info, void* uc) {
  const int saved_errno = errno;
  struct sigaction prev = g->prev[sig];
  const bool default_action = !(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_DFL;
  if (g->active && g->pid.load() == getpid() && g->bg_running.load()) {
    if (default_action) g->sig_final.store(sig);
    const uint64_t want = g->sig_req.fetch_add(1) + 1;
    for (int i = 0; i < 1000 && g->sig_done.load() < want; ++i) {
      timespec ts{0, 1000000};
      nanosleep(&ts, nullptr);
    }
  }
  errno = saved_errno;
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, uc);
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;
  if (prev.sa_handler == SIG_DFL) {
    // Keep the default semantics: the process dies "killed by signal".
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
    raise(sig);
    return;
  }
  prev.sa_handler(sig);
}

void install_signal(int sig) {
  struct sigaction sa{};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction old{};
  if (sigaction(sig, nullptr, &old) != 0) return;
  if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) return;  // job ignores it
  g->prev[sig] = old;
  sigaction(sig, &sa, nullptr);
}

void atfork_prepare() {
  if (!g || !g->active) return;
  g->bg_work_mu.lock();  // first: the background thread takes the others while holding it
  g->start_mu.lock();
  g->flush_mu.lock(); g->reg_mu.lock(); g->ing_mu.lock(); g->q_mu.lock(); g->mem_mu.lock();
  g->kern_mu.lock(); g->nvtx_mu.lock(); g->sink_mu.lock();
}
void atfork_parent() {
  if (!g || !g->active) return;
  g->sink_mu.unlock(); g->nvtx_mu.unlock(); g->kern_mu.unlock(); g->mem_mu.unlock();
  g->q_mu.unlock(); g->ing_mu.unlock(); g->reg_mu.unlock(); g->flush_mu.unlock();
  g->start_mu.unlock();
  g->bg_work_mu.unlock();
}
void atfork_child() {
  if (!g || !g->active) return;
  atfork_parent();  // unlock everything (this thread locked it in prepare)
  // The parent's background thread may have been waiting on the condition variable: its
  // copied state is meaningless here. Start with a fresh one (the old one is leaked).
  g->cv = new std::condition_variable();
  // A new session for the child; the parent's pending data stays the parent's.
  g->pid.store(getpid());
  g->ppid = getppid();
  g->start_unix_ns = realtime_ns();
  g->start_mono_ns = now_ns();
  g->session_open = false;
  g->goodbye_sent = false;
  if (g->fd >= 0) ::close(g->fd);
  g->fd = -1;
  g->sink_dead = false;
  g->sink_tried = false;
  for (Batch* b : g->queue) g->pool.push_back(b);
  g->queue.clear();
  g->queued_bytes = 0;
  g->stop = false;
  g->flush_req = false;
  const uint32_t n = g->ntables.load();
  for (uint32_t i = 0; i < n; ++i) {
    Table* t = g->slots[i].load();
    if (!t) continue;
    if (t->ing && t->has_pending) (void)t->ing->take_delta();
    t->has_pending = false;
    t->sent = false;
    t->extra_dirty = !t->extra.empty();
  }
  g->ties_sent = 0;
  g->steps.store(0);
  g->steps_sent = 0;
  g->drops.clear();
  g->drops_dirty = false;
  g->mem_events.clear();
  g->notes.clear();
  g->kernels.clear();
  g->kernels_dirty = false;
  for (auto& [name, r] : g->ranges) {
    r->count = 0; r->total_ns = 0; r->lookups = 0; r->alloc_bytes = 0;
  }
  g->ranges_dirty.store(false);
  g->bg = nullptr;  // the parent's thread does not exist here (leaked on purpose)
  g->bg_running.store(false);
  g->need_start.store(true);
  g->sig_req.store(0);
  g->sig_done.store(0);
  g->sig_final.store(0);
  g->exited.store(false);
  g->unsent_bytes.store(0);
  g->child_quiet.store(true);
  cuda_after_fork_child();
}

__attribute__((constructor(101))) void edo_trace_init() {
  if (g) return;
  g = new State();
  std::vector<std::string> warnings;
  g->cfg = parse_config([](const char* n) { return getenv(n); }, &warnings);
  g->active = g->cfg.active();
  g->pid.store(getpid());
  g->ppid = getppid();
  g->start_unix_ns = realtime_ns();
  g->start_mono_ns = now_ns();
  const bool root = g->cfg.root_pid == 0 || g->cfg.root_pid == getpid();
  if (g->active && root)
    for (auto& w : warnings) write_stderr(w);
  if (!g->active) return;
  g->stats_cfg.exact_rows_limit = g->cfg.exact_rows;
  g->stats_cfg.top_k = uint32_t(g->cfg.top_k);
  g->stats_cfg.track_lru = g->cfg.lru;
  g->addr_index = std::make_shared<wire::AddressIndex>();
  if (!g->cfg.output.empty() && !getenv("EDO_OUTPUT_OWNER")) {
    // The first process of an EDO_OUTPUT run owns the file; start it afresh.
    int fd = ::open(g->cfg.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
    setenv("EDO_OUTPUT_OWNER", std::to_string(getpid()).c_str(), 1);
  }
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  atexit(on_exit_handler);
  install_signal(SIGTERM);
  install_signal(SIGINT);
  g->need_start.store(true);
  ensure_bg();
  if (g->cfg.cuda) cupti_start();
  // Sessions open lazily (first table, lookup, step, NVTX range or GPU allocation), so that
  // the shells, launchers and compilers a job runs leave no empty rows; `edo record` adds a
  // row for the job's first process if it never reported (it carries the exit code).
}

__attribute__((destructor)) void edo_trace_fini() { on_exit_handler(); }

RangeTotals* range_named(const std::string& name) {
  std::lock_guard<std::mutex> lk(g->nvtx_mu);
  auto it = g->ranges.find(name);
  if (it != g->ranges.end()) return it->second;
  auto* r = new RangeTotals();
  r->name = name;
  g->ranges.emplace(name, r);
  return r;
}

RangeTotals* innermost_range() {
  if (!tl_ranges || tl_ranges->empty()) return nullptr;
  return tl_ranges->back().r;
}

}  // namespace

// ---- internal API ----------------------------------------------------------------------------
int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool tracer_active() { return g && g->active; }
const Config& tracer_config() { return g->cfg; }
void tracer_log(const std::string& line) { write_stderr(line.rfind("edo: ", 0) == 0 ? line : "edo: " + line); }
void tracer_verbose(const std::string& line) {
  if (g && g->cfg.verbose) tracer_log(line);
}
int64_t session_pid() { return g ? g->pid.load() : 0; }

void flush_now(bool final_goodbye, int reason, int code) {
  if (!tracer_active() || g->pid.load() != getpid()) return;
  HoldSignals hold;
  if (final_goodbye) {
    stop_bg();
    g->exited.store(true);
    g->need_start.store(false);
  }
  cupti_flush();
  flush_internal(final_goodbye, static_cast<wire::EndReason>(reason), code, false);
}

void resume_after_failed_exec() {
  if (!tracer_active() || g->pid.load() != getpid()) return;
  std::lock_guard<std::mutex> flk(g->flush_mu);
  g->goodbye_sent = false;
  g->exited.store(false);
  g->need_start.store(true);
  std::lock_guard<std::mutex> lk(g->q_mu);
  g->stop = false;
}

void count_drop(const char* counter, uint64_t n) {
  if (!tracer_active()) return;
  std::lock_guard<std::mutex> lk(g->mem_mu);
  g->drops[counter] += n;
  g->drops_dirty = true;
}

void record_note(const std::string& key, const std::string& value) {
  if (!tracer_active()) return;
  std::lock_guard<std::mutex> lk(g->mem_mu);
  g->notes.push_back({key, value});
}

void record_memory_event(int64_t bytes, uint64_t address, uint64_t stream, int32_t device,
                         const char* kind) {
  if (!tracer_active()) return;
  ensure_bg();
  if (bytes > 0)
    if (RangeTotals* r = innermost_range()) {
      r->alloc_bytes += uint64_t(bytes);
      g->ranges_dirty.store(true);
    }
  std::lock_guard<std::mutex> lk(g->mem_mu);
  if (g->mem_events.size() >= g->cfg.max_events) {
    g->drops["memory_events"] += 1;
    g->drops_dirty = true;
    return;
  }
  g->mem_events.push_back({now_ns() - g->start_mono_ns, bytes, address, stream, device, kind});
}

void record_kernel_launch(const std::string& name, const std::vector<std::string>& tables) {
  if (!tracer_active()) return;
  std::lock_guard<std::mutex> lk(g->kern_mu);
  auto& k = g->kernels[name];
  k.launches++;
  k.tables.insert(tables.begin(), tables.end());
  g->kernels_dirty = true;
}

void record_kernel_time(const std::string& name, uint64_t ns) {
  if (!tracer_active()) return;
  std::lock_guard<std::mutex> lk(g->kern_mu);
  g->kernels[name].total_ns += ns;
  g->kernels_dirty = true;
}

std::shared_ptr<const wire::AddressIndex> table_address_index() {
  if (!g) return nullptr;
  std::lock_guard<std::mutex> lk(g->reg_mu);
  return g->addr_index;
}

void range_push(const std::string& name) {
  if (!tracer_active()) return;
  ensure_bg();
  RangeTotals* r = range_named(name);
  if (!tl_ranges) tl_ranges = new std::vector<OpenRange>();  // leaked per thread: tiny
  tl_ranges->push_back({r, now_ns()});
}

void range_pop() {
  if (!tracer_active() || !tl_ranges || tl_ranges->empty()) return;
  OpenRange o = tl_ranges->back();
  tl_ranges->pop_back();
  o.r->count++;
  o.r->total_ns += uint64_t(now_ns() - o.start);
  g->ranges_dirty.store(true);
}

uint64_t range_start(const std::string& name) {
  if (!tracer_active()) return 0;
  ensure_bg();
  RangeTotals* r = range_named(name);
  std::lock_guard<std::mutex> lk(g->nvtx_mu);
  uint64_t id = g->next_range_id++;
  g->started[id] = {r, now_ns()};
  return id;
}

void range_end(uint64_t id) {
  if (!tracer_active()) return;
  OpenRange o{};
  {
    std::lock_guard<std::mutex> lk(g->nvtx_mu);
    auto it = g->started.find(id);
    if (it == g->started.end()) return;
    o = it->second;
    g->started.erase(it);
  }
  o.r->count++;
  o.r->total_ns += uint64_t(now_ns() - o.start);
  g->ranges_dirty.store(true);
}

void ingest_indices(int64_t table, const void* indices, uint64_t count, int type) {
  Table* t = table_of(table);
  if (!t) return;
  std::lock_guard<std::mutex> lk(g->ing_mu);
  ingest_locked(t, indices, count, type);
}

// ---- C API back ends -----------------------------------------------------------------------
int64_t api_register(const char* name, const void* base, uint64_t rows, uint32_t dim, int dtype,
                     int device) {
  if (!g) edo_trace_init();
  if (!name || !*name || rows == 0 || dim == 0 || dtype < EDO_F32 || dtype > EDO_F8E4M3 ||
      device < EDO_HOST || device > EDO_CUDA)
    return EDO_ERR_INVALID_ARGUMENT;
  if (g->active) ensure_bg();
  g->child_quiet.store(false);
  std::lock_guard<std::mutex> lk(g->reg_mu);
  const uint32_t n = g->ntables.load();
  int64_t tie_with = -1;
  for (uint32_t i = 0; i < n; ++i) {
    Table* t = g->slots[i].load();
    if (t->name == name) {
      if (t->rows != rows || t->dim != dim || t->dtype != dtype) return EDO_ERR_SHAPE_MISMATCH;
      return t->id;
    }
    if (base && t->base == reinterpret_cast<uint64_t>(base) && tie_with < 0) tie_with = t->id;
  }
  if (n >= kMaxTables) return EDO_ERR_NO_MEMORY;
  auto* t = new Table();
  t->id = n;
  t->name = name;
  t->base = reinterpret_cast<uint64_t>(base);
  t->rows = rows;
  t->dim = dim;
  t->dtype = uint8_t(dtype);
  t->device = uint8_t(device);
  t->bytes = rows * dim * elem_size(dtype);
  if (g->active) {
    auto idx = std::make_shared<wire::AddressIndex>(*g->addr_index);
    idx->add(t->base, t->bytes, t->name);
    idx->finalize();
    g->addr_index = idx;
  }
  g->slots[n].store(t, std::memory_order_release);
  g->ntables.store(n + 1);
  if (tie_with >= 0) g->ties.emplace_back(uint32_t(tie_with), t->id);
  return t->id;
}

int api_lookup(int64_t table, const void* indices, uint64_t count, int type, int device,
               void* stream) {
  Table* t = table_of(table);
  if (!t) return EDO_ERR_BAD_HANDLE;
  if ((type != EDO_I32 && type != EDO_I64) || (device != EDO_HOST && device != EDO_CUDA))
    return EDO_ERR_INVALID_ARGUMENT;
  if (count == 0) return EDO_OK;
  if (!indices) return EDO_ERR_INVALID_ARGUMENT;
  if (!g->active) return EDO_OK;
  ensure_bg();
  if (g->child_quiet.load(std::memory_order_relaxed)) g->child_quiet.store(false);
  if (RangeTotals* r = innermost_range()) {
    r->lookups.fetch_add(count, std::memory_order_relaxed);
    g->ranges_dirty.store(true, std::memory_order_relaxed);
  }
  if (device == EDO_CUDA) return cuda_lookup(table, indices, count, type, stream);
  if (!g->cfg.async || !g->bg_running.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lk(g->ing_mu);
    ingest_locked(t, indices, count, type);
    return EDO_OK;
  }
  const size_t bytes = size_t(count) * (type == EDO_I64 ? 8 : 4);
  Batch* b = nullptr;
  {
    std::lock_guard<std::mutex> lk(g->q_mu);
    if (g->queued_bytes + bytes > (g->cfg.max_buffer_mb << 20)) {
      std::lock_guard<std::mutex> lk2(g->mem_mu);
      g->drops["batches"] += 1;
      g->drops["indices"] += count;
      g->drops_dirty = true;
      return EDO_ERR_NO_MEMORY;
    }
    g->queued_bytes += bytes;
    if (!g->pool.empty()) {
      b = g->pool.back();
      g->pool.pop_back();
    }
  }
  if (!b) b = new (std::nothrow) Batch();
  if (b && b->capacity < bytes) {
    b->data.reset(new (std::nothrow) char[bytes]);
    b->capacity = b->data ? bytes : 0;
  }
  if (!b || !b->data) {
    std::lock_guard<std::mutex> lk(g->q_mu);
    g->queued_bytes -= bytes;
    delete b;
    count_drop("batches", 1);
    return EDO_ERR_NO_MEMORY;
  }
  std::memcpy(b->data.get(), indices, bytes);
  b->table = table;
  b->type = type;
  b->count = count;
  b->bytes = bytes;
  {
    std::lock_guard<std::mutex> lk(g->q_mu);
    g->queue.push_back(b);
  }
  g->cv->notify_one();
  return EDO_OK;
}

int api_set_extra_bytes(int64_t table, const char* kind, uint64_t bytes) {
  Table* t = table_of(table);
  if (!t) return EDO_ERR_BAD_HANDLE;
  if (!kind || !*kind) return EDO_ERR_INVALID_ARGUMENT;
  g->child_quiet.store(false);
  std::lock_guard<std::mutex> lk(g->reg_mu);
  t->extra[kind] = bytes;
  t->extra_dirty = true;
  return EDO_OK;
}

int api_step() {
  if (!g) edo_trace_init();
  if (!g->active) return EDO_OK;
  ensure_bg();
  const uint64_t s = g->steps.fetch_add(1) + 1;
  if (g->cfg.window_steps > 0 && s % g->cfg.window_steps == 0) {
    if (g->cfg.async && g->bg_running.load()) {
      auto* b = new (std::nothrow) Batch();
      if (b) {
        std::lock_guard<std::mutex> lk(g->q_mu);
        g->queue.push_back(b);
      }
      g->cv->notify_one();
    } else {
      std::lock_guard<std::mutex> lk(g->ing_mu);
      close_windows_locked();
    }
  }
  return EDO_OK;
}

}  // namespace edo::capture
