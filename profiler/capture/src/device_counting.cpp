#include "device_counting.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "device/count_kernel.h"
#include "edo/edo.h"
#include "edo/stats/row_hash.h"
#include "registry.h"
#include "tracer.h"

namespace edo::capture {

static_assert(device::kCountedHot == stats::kCountedHot && device::kCountedThin == stats::kCountedThin,
              "the kernel and the statistics engine must agree on the sampling rules");

namespace {
constexpr uint32_t kThreads = 256;
// References between footprint windows (as the CPU path): 8192 for the first 256 windows,
// then 65536, so that windows are a small share of what reaches the host.
uint64_t window_every(uint64_t windows_taken) { return windows_taken < 256 ? 8192 : 65536; }

uint64_t align8(uint64_t x) { return (x + 7) & ~uint64_t{7}; }

}  // namespace

struct DeviceCounting::Context {
  CUcontext ctx = nullptr;
  bool usable = false;
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  CUstream stream = nullptr;      // the tracer's own (non-blocking)
  CUdeviceptr arena = 0;
  char* host_arena = nullptr;     // pinned mirror of the arena
  uint64_t head = 0, tail = 0;    // ring allocation (monotonic byte counters)
  unsigned grid_limit = 1024;
  bool retained_primary = false;  // edo holds a retain on this (primary) context while its handles live
};

struct DeviceCounting::Table {
  uint32_t id = 0;
  uint64_t rows = 0;
  bool exact = true;
  Context* ctx = nullptr;
  CUdeviceptr counts = 0, cms = 0, hll = 0;
  uint32_t cms_width_log2 = 0, cms_depth = 0, hll_p = 0;
  uint64_t threshold = 0;
  double rate = 1.0;
  std::vector<uint32_t> mirror, after;         // collect_mu_: counters (or cells) at the last collect, and now
  std::vector<uint32_t> hll_host;              // collect_mu_
  // collect_mu_: pinned host memory the counters (then the HyperLogLog registers) are copied
  // into at each collect (a copy into pageable memory is staged by the driver and blocks);
  // nullptr when pinned memory was refused: `after` and `hll_host` are used instead.
  uint32_t* pinned = nullptr;
  uint64_t pos = 0;                            // references submitted so far
  uint64_t next_window = 0, window_need = 0;   // footprint window planning
  uint64_t windows_taken = 0;
  std::vector<uint64_t> partial;               // a window being gathered from small batches
  stats::CountedSegment pending;               // sample, windows, candidates since the last collect
  bool dirty = false;
  bool in_graph = false;  // counted inside a CUDA graph capture: every replay adds to the counters
};

struct DeviceCounting::Batch {
  Table* table = nullptr;
  Context* ctx = nullptr;
  uint64_t pos = 0;                // of the batch's first reference
  uint64_t off = 0, bytes = 0;     // region in the arena (byte offset, size); bytes == 0: none
  uint64_t end = 0;                // the ring's head after it (freeing it moves the tail there)
  uint32_t cap = 0, window_n = 0;
  bool window_starts = false, window_breaks = false;
  CUevent kernel_done = nullptr, copied = nullptr;
};

DeviceCounting::DeviceCounting(const Driver& drv, const void* image, uint64_t arena_bytes, const stats::StatsConfig& cfg,
                               uint64_t device_budget)
    : drv_(drv), image_(image), arena_bytes_(arena_bytes & ~uint64_t{15}), cfg_(cfg), device_budget_(device_budget) {}

CUdeviceptr DeviceCounting::allocate(uint64_t bytes) {
  // Never past EDO_MAX_DEVICE_MB: the driver is not even asked.
  if (bytes > device_budget_ - std::min(device_budget_, totals_.device_bytes)) return 0;
  CUdeviceptr p = 0;
  InternalCall internal;
  if (drv_.cuMemAlloc(&p, bytes) != CUDA_SUCCESS) return 0;
  {
    std::lock_guard<std::mutex> lk(own_mu_);
    own_.insert({uint64_t(p), uint64_t(p) + bytes});
  }
  totals_.device_bytes += bytes;
  return p;
}

bool DeviceCounting::owns(uint64_t address) const {
  // CUPTI's buffer callback asks this: own_mu_ is never held across a driver call, so the
  // callback never waits for a lookup or a poll that is inside one.
  std::lock_guard<std::mutex> lk(own_mu_);
  auto it = own_.upper_bound({address, UINT64_MAX});
  if (it == own_.begin()) return false;
  --it;
  return address >= it->first && address < it->second;
}

DeviceCounting::Context* DeviceCounting::context_for(CUcontext ctx, bool may_set_up) {
  auto it = contexts_.find(ctx);
  if (it != contexts_.end()) return it->second->usable ? it->second.get() : nullptr;
  if (!may_set_up) return nullptr;
  auto& slot = contexts_[ctx];
  slot = std::make_unique<Context>();
  Context& c = *slot;
  c.ctx = ctx;
  InternalCall internal;
  if (drv_.cuModuleLoadData(&c.module, image_) != CUDA_SUCCESS ||
      drv_.cuModuleGetFunction(&c.fn, c.module, "edo_count") != CUDA_SUCCESS) {
    tracer_verbose("the device counting module does not load in this context: device indices are copied to the host");
    return nullptr;
  }
  if (drv_.cuStreamCreate(&c.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return nullptr;
  if (arena_bytes_ > device_budget_ - std::min(device_budget_, totals_.device_bytes)) {
    count_drop("device_memory_bound_contexts", 1);
    tracer_verbose("the device counting arena does not fit EDO_MAX_DEVICE_MB: device indices are copied to the host");
    return nullptr;
  }
  c.arena = allocate(arena_bytes_);
  if (!c.arena || drv_.cuMemHostAlloc(reinterpret_cast<void**>(&c.host_arena), arena_bytes_, 0) != CUDA_SUCCESS) {
    tracer_verbose("no memory for the device counting arena: device indices are copied to the host");
    return nullptr;
  }
  totals_.pinned_bytes += arena_bytes_;
  // Set-up only: the arena starts zeroed (region headers are counters).
  if (drv_.cuMemsetD32Async(c.arena, 0, arena_bytes_ / 4, c.stream) != CUDA_SUCCESS ||
      drv_.cuStreamSynchronize(c.stream) != CUDA_SUCCESS)
    return nullptr;
  CUdevice dev = 0;
  int sms = 0;
  if (drv_.cuCtxGetDevice && drv_.cuDeviceGetAttribute && drv_.cuCtxGetDevice(&dev) == CUDA_SUCCESS &&
      drv_.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) == CUDA_SUCCESS && sms > 0)
    c.grid_limit = unsigned(sms) * 16;
  // A primary context lives while someone retains it (cuda.h:5851-5856): if the job's runtime
  // released its last retain, edo's module, stream and memory in it would dangle. edo keeps one
  // retain for as long as it holds them (until exit: they are never freed before). Only an
  // already active primary context is retained: retaining an inactive one would create it.
  unsigned flags = 0;
  int active = 0;
  CUcontext primary = nullptr;
  if (drv_.cuDevicePrimaryCtxRetain && drv_.cuDevicePrimaryCtxGetState && drv_.cuCtxGetDevice(&dev) == CUDA_SUCCESS &&
      drv_.cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && active &&
      drv_.cuDevicePrimaryCtxRetain(&primary, dev) == CUDA_SUCCESS) {
    if (primary == ctx) c.retained_primary = true;
    else if (drv_.cuDevicePrimaryCtxRelease) drv_.cuDevicePrimaryCtxRelease(dev);  // not ours to hold
  }
  c.usable = true;
  return &c;
}

DeviceCounting::Table* DeviceCounting::table_for(const TableInfo& info, Context* c, bool may_set_up) {
  auto it = tables_.find(info.id);
  if (it != tables_.end()) return it->second->ctx == c ? it->second.get() : nullptr;  // one context per table
  if (!may_set_up) return nullptr;
  auto& slot = tables_[info.id];
  auto t = std::make_unique<Table>();
  t->id = info.id;
  t->rows = info.rows;
  t->exact = info.rows <= cfg_.exact_rows_limit;
  t->ctx = c;
  t->threshold = stats::counted_sample_threshold(info.rows, cfg_);
  t->rate = double(t->threshold) / double(uint64_t{1} << stats::hash::kSampleModBits);
  uint64_t words = 0, need = 0;
  if (t->exact) {
    words = info.rows;
    need = words * 4;
  } else {
    uint32_t w = 1, lg = 0;
    while (w < cfg_.cms_width && lg < 30) w <<= 1, ++lg;
    t->cms_width_log2 = lg;
    t->cms_depth = std::max<uint32_t>(1, std::min<uint32_t>(cfg_.cms_depth, 16));
    t->hll_p = std::clamp<uint32_t>(cfg_.hll_precision, 4, 18);
    words = uint64_t{t->cms_depth} << lg;
    need = words * 4 + (uint64_t{1} << t->hll_p) * 4;
  }
  if (need > device_budget_ - std::min(device_budget_, totals_.device_bytes)) {
    // Beyond EDO_MAX_DEVICE_MB: refused on the device, never half-allocated. The table's host
    // statistics were already laid out for these counters (exact or sketch, session.cpp), so
    // its batches are copied to the host and counted there with the same statistics rather
    // than sketched here into a shape the host side does not expect.
    count_drop("device_memory_bound_tables", 1);
    ++totals_.bound_tables;
    tracer_verbose("a table's device counters do not fit EDO_MAX_DEVICE_MB: its device indices are copied to the host");
    slot = std::move(t);
    slot->ctx = nullptr;
    return nullptr;
  }
  if (t->exact) {
    t->counts = allocate(need);
  } else {
    t->cms = allocate(words * 4);
    t->hll = allocate((uint64_t{1} << t->hll_p) * 4);
    t->hll_host.assign(size_t{1} << t->hll_p, 0);
  }
  InternalCall internal;
  const bool ok = (t->counts || (t->cms && t->hll)) &&
                  drv_.cuMemsetD32Async(t->exact ? t->counts : t->cms, 0, words, c->stream) == CUDA_SUCCESS &&
                  (t->exact || drv_.cuMemsetD32Async(t->hll, 0, size_t{1} << t->hll_p, c->stream) == CUDA_SUCCESS) &&
                  drv_.cuStreamSynchronize(c->stream) == CUDA_SUCCESS;
  if (!ok) {
    // No device memory for the counters: this table's device indices go the host-copy way.
    count_drop("device_counters_no_memory", 1);
    slot = std::move(t);
    slot->ctx = nullptr;
    return nullptr;
  }
  t->mirror.assign(words, 0);
  const uint64_t pinned_words = words + t->hll_host.size();
  void* pinned = nullptr;
  if (drv_.cuMemHostAlloc(&pinned, pinned_words * 4, 0) == CUDA_SUCCESS && pinned) {
    t->pinned = static_cast<uint32_t*>(pinned);
    totals_.pinned_bytes += pinned_words * 4;
  }
  slot = std::move(t);
  return slot.get();
}

bool DeviceCounting::reserve(Context* c, uint64_t bytes, uint64_t& off) {
  if (bytes > arena_bytes_) return false;
  uint64_t phys = c->head % arena_bytes_;
  uint64_t waste = phys + bytes > arena_bytes_ ? arena_bytes_ - phys : 0;  // regions never wrap
  if (c->head + waste + bytes - c->tail > arena_bytes_) return false;
  c->head += waste;
  off = c->head % arena_bytes_;
  c->head += bytes;
  return true;
}

int DeviceCounting::lookup(const TableInfo& info, const void* indices, uint64_t n, int type, CUstream stream) {
  // Everything below runs in RELAXED capture mode (InternalCall): the job's thread may be in
  // the middle of its own capture.
  InternalCall internal;
  // Before any work on the caller's stream: is it being captured into a CUDA graph? Then only
  // the counting kernel goes in (it is replayed with the graph and adds to the counters each
  // time); an event record, a copy or a wait on edo's own stream would join edo's stream to
  // the capture (CUDA_ERROR_STREAM_CAPTURE_UNJOINED at its end), and set-up (module load,
  // allocation, synchronisation) is not allowed in a capture.
  const Capture cap = capture_status(drv_, stream);
  if (cap == Capture::kImplicit || cap == Capture::kInvalidated || cap == Capture::kUnknown) {
    // The legacy stream while a blocking stream captures (any use would break that capture),
    // a capture already broken, or a status the driver would not tell: no work at all.
    count_drop("device_batches_not_counted_in_capture", 1);
    return EDO_OK;
  }
  const bool capturing = cap == Capture::kActive;
  // The stream's own context (not whichever the thread has current: a job may create a stream
  // in one context and switch), made current for the set-up and the launch.
  CUcontext ctx = nullptr;
  const CUresult got = drv_.cuStreamGetCtx ? drv_.cuStreamGetCtx(stream, &ctx) : drv_.cuCtxGetCurrent(&ctx);
  if (got != CUDA_SUCCESS || !ctx) return EDO_ERR_NO_CUDA;
  ScopedContext in_ctx(drv_, ctx);
  if (!in_ctx.ok()) {
    count_drop("device_batches", 1);
    return EDO_ERR_CUDA;
  }
  // The kernel must not read past the caller's buffer: a fault would break the job's context.
  // Its first and last bytes must both be in device memory the driver knows (a pointer it
  // cannot place at all, e.g. pinned host memory, is trusted: the caller's own kernel reads it).
  if (drv_.cuMemGetAddressRange && n > 0) {
    const uint64_t a = reinterpret_cast<uint64_t>(indices), bytes = n * (type == EDO_I64 ? 8 : 4);
    CUdeviceptr base = 0;
    size_t size = 0;
    if (drv_.cuMemGetAddressRange(&base, &size, CUdeviceptr(a)) == CUDA_SUCCESS && a + bytes > uint64_t(base) + size &&
        drv_.cuMemGetAddressRange(&base, &size, CUdeviceptr(a + bytes - 1)) != CUDA_SUCCESS) {
      count_drop("device_batches_past_their_buffer", 1);
      return EDO_ERR_INVALID_ARGUMENT;
    }
  }
  std::lock_guard<std::mutex> lk(mu_);
  Context* c = context_for(ctx, !capturing);
  Table* t = c ? table_for(info, c, !capturing) : nullptr;
  if (capturing && !t) {
    // The table's first batch is inside a capture: its set-up cannot happen there, and the
    // host-copy path would put a copy and an event into the capture. Not counted (replays
    // neither); said in the report.
    count_drop("device_batches_captured_before_setup", 1);
    return EDO_OK;
  }
  if (!c || !t) return kUnavailable;
  if (capturing) return launch_captured(*c, *t, indices, n, type, stream);

  Batch b;
  uint64_t head_before = c->head;
  b.table = t;
  b.ctx = c;
  b.pos = t->pos;
  device::CountParams p{};
  p.indices = reinterpret_cast<uint64_t>(indices);
  p.n = n;
  p.rows = t->rows;
  p.counts = t->counts;
  p.cms = t->cms;
  p.hll = t->hll;
  p.threshold = t->threshold;
  p.index_bytes = type == EDO_I64 ? 8 : 4;
  p.cms_width_log2 = t->cms_width_log2;
  p.cms_depth = t->cms_depth;
  p.hll_p = t->hll_p;
  if (cfg_.track_lru) {
    // Room for about twice the expected sample (thinning keeps hot rows from flooding it).
    const double r = t->rate;
    uint64_t cap = 4096 + uint64_t(2.0 * r * double(n) / (1.0 + 7.0 * r)) + (t->exact ? 0 : n / 64);
    cap = std::min<uint64_t>({cap, n, (arena_bytes_ / 4) / sizeof(device::SampleEntry)});
    // The footprint window this batch contributes, if one is due.
    uint64_t wb = 0, wn = 0;
    if (t->window_need) {
      wn = std::min<uint64_t>(n, t->window_need);
    } else if (t->pos + n >= t->next_window) {
      wn = std::min<uint64_t>(n, stats::kCountedWindow);
      wb = n - wn;
      b.window_starts = true;
      t->next_window = t->pos + n + window_every(t->windows_taken++);
    }
    const uint64_t bytes = align8(sizeof(device::RegionHeader) + cap * sizeof(device::SampleEntry) + wn * 8);
    head_before = c->head;
    if (reserve(c, bytes, b.off)) {
      b.bytes = bytes;
      b.end = c->head;
      b.cap = uint32_t(cap);
      b.window_n = uint32_t(wn);
      p.region = c->arena + b.off;
      p.cap = b.cap;
      p.window_begin = wb;
      p.window_n = b.window_n;
      t->window_need = b.window_starts ? stats::kCountedWindow - wn : t->window_need - wn;
    } else {
      // Arena full (the host is behind): counted, not sampled.
      ++totals_.batches_without_sample;
      b.window_breaks = t->window_need || b.window_starts;
      t->window_need = 0;
    }
  }
  const unsigned grid = unsigned(std::clamp<uint64_t>((n + kThreads - 1) / kThreads, 1, c->grid_limit));
  void* args[] = {&p};
  auto event = [&]() {
    CUevent e = nullptr;
    if (!free_events_.empty()) {
      e = free_events_.back();
      free_events_.pop_back();
    } else if (drv_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
      e = nullptr;
    }
    return e;
  };
  b.kernel_done = event();
  b.copied = event();
  bool ok = b.kernel_done && b.copied &&
            drv_.cuLaunchKernel(c->fn, grid, 1, 1, kThreads, 1, 1, 0, stream, args, nullptr) == CUDA_SUCCESS;
  if (ok) {
    // From here on nothing touches the caller's stream but one event record.
    ok = drv_.cuEventRecord(b.kernel_done, stream) == CUDA_SUCCESS &&
         drv_.cuStreamWaitEvent(c->stream, b.kernel_done, 0) == CUDA_SUCCESS &&
         (!b.bytes || (drv_.cuMemcpyDtoHAsync(c->host_arena + b.off, c->arena + b.off, b.bytes, c->stream) == CUDA_SUCCESS &&
                     drv_.cuMemsetD32Async(c->arena + b.off, 0, sizeof(device::RegionHeader) / 4, c->stream) == CUDA_SUCCESS)) &&
         drv_.cuEventRecord(b.copied, c->stream) == CUDA_SUCCESS;
    t->pos += n;
    t->dirty = true;
    ++totals_.batches;
    totals_.indices += n;
    if (!ok) count_drop("device_batches_untracked", 1);
    in_flight_.push_back(b);
    return ok ? EDO_OK : EDO_ERR_CUDA;
  }
  // Not launched: give the region back (it is the newest) and the events.
  c->head = head_before;
  if (b.window_starts || t->window_need) t->window_need = 0, t->next_window = t->pos;
  if (b.kernel_done) free_events_.push_back(b.kernel_done);
  if (b.copied) free_events_.push_back(b.copied);
  count_drop("device_batches", 1);
  return EDO_ERR_CUDA;
}

int DeviceCounting::launch_captured(Context& c, Table& t, const void* indices, uint64_t n, int type, CUstream stream) {
  // The counting kernel alone, without a sample region (no copy back, no event): the counters
  // are read at each flush like any table's. The batch's positions (LRU sample, footprint
  // windows) are not known per replay, so a captured batch adds counts only.
  device::CountParams p{};
  p.indices = reinterpret_cast<uint64_t>(indices);
  p.n = n;
  p.rows = t.rows;
  p.counts = t.counts;
  p.cms = t.cms;
  p.hll = t.hll;
  p.threshold = t.threshold;
  p.index_bytes = type == EDO_I64 ? 8 : 4;
  p.cms_width_log2 = t.cms_width_log2;
  p.cms_depth = t.cms_depth;
  p.hll_p = t.hll_p;
  const unsigned grid = unsigned(std::clamp<uint64_t>((n + kThreads - 1) / kThreads, 1, c.grid_limit));
  void* args[] = {&p};
  if (drv_.cuLaunchKernel(c.fn, grid, 1, 1, kThreads, 1, 1, 0, stream, args, nullptr) != CUDA_SUCCESS) {
    count_drop("device_batches_captured", 1);
    return EDO_ERR_CUDA;
  }
  t.in_graph = true;
  t.dirty = true;
  ++totals_.captured_batches;
  return EDO_OK;
}

void DeviceCounting::take(Batch& b) {
  Table& t = *b.table;
  Context& c = *b.ctx;
  if (b.bytes) {
    const char* region = c.host_arena + b.off;
    device::RegionHeader h;
    std::memcpy(&h, region, sizeof h);
    t.pending.out_of_range += h.out_of_range;
    const uint32_t n = std::min(h.sampled, b.cap);
    if (h.sampled > b.cap) totals_.samples_dropped += h.sampled - b.cap;  // the LRU estimate has fewer samples
    const auto* e = reinterpret_cast<const device::SampleEntry*>(region + sizeof(device::RegionHeader));
    for (uint32_t i = 0; i < n; ++i) {
      if (e[i].pos == device::kCandidate) t.pending.candidates.push_back(e[i].row);
      else t.pending.sample.push_back({e[i].row, b.pos + e[i].pos, e[i].count});
    }
    totals_.samples += n;
    if (b.window_n) {
      const auto* w = reinterpret_cast<const uint64_t*>(region + sizeof(device::RegionHeader) + uint64_t{b.cap} * sizeof(device::SampleEntry));
      if (b.window_starts) t.partial.clear();
      t.partial.insert(t.partial.end(), w, w + b.window_n);
      if (t.partial.size() >= stats::kCountedWindow) {
        t.pending.windows.emplace_back(t.partial.begin(), t.partial.begin() + stats::kCountedWindow);
        t.partial.clear();
      }
    }
    c.tail = b.end;  // regions are freed in the order they were taken
  } else if (b.window_breaks) {
    t.partial.clear();
  }
  t.dirty = true;
  free_events_.push_back(b.kernel_done);
  free_events_.push_back(b.copied);
}

void DeviceCounting::poll(bool wait_all) {
  // One poller at a time (poll_mu_ is taken by nothing else): the front batch stays the front
  // while its event is queried without mu_, which lookups and take() need.
  std::lock_guard<std::mutex> plk(poll_mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (true) {
    {
      CUevent copied;
      CUcontext ctx;
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (in_flight_.empty()) return;
        copied = in_flight_.front().copied;
        ctx = in_flight_.front().ctx->ctx;
      }
      CUresult q;
      {
        InternalCall internal;  // RELAXED: another thread may be capturing in GLOBAL mode
        ScopedContext cur(drv_, ctx);
        q = cur.ok() ? drv_.cuEventQuery(copied) : CUDA_ERROR_INVALID_CONTEXT;
      }
      std::lock_guard<std::mutex> lk(mu_);
      Batch& b = in_flight_.front();  // still the one queried: only pollers pop
      if (q != CUDA_ERROR_NOT_READY) {
        if (q == CUDA_SUCCESS) {
          take(b);
        } else {  // the context is gone or broken: what this batch counted is lost
          count_drop("device_batches", 1);
          if (b.bytes) b.ctx->tail = b.end;
        }
        in_flight_.pop_front();
        continue;
      }
    }
    if (!wait_all || std::chrono::steady_clock::now() > deadline) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void DeviceCounting::collect(bool final, const Ingest& ingest) {
  std::lock_guard<std::mutex> clk(collect_mu_);
  if (final) poll(true);
  struct Work {
    Table* t;
    stats::CountedSegment seg;
  };
  std::vector<Work> work;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& [id, t] : tables_) {
      // A table counted inside a CUDA graph changes with every replay, without a lookup.
      if (!t->ctx || !(t->dirty || t->in_graph)) continue;
      work.push_back({t.get(), std::move(t->pending)});
      t->pending = stats::CountedSegment{};
      t->dirty = false;
    }
  }
  for (Work& w : work) {
    Table& t = *w.t;
    const size_t words = t.mirror.size();
    if (!t.pinned) t.after.resize(words);
    uint32_t* after = t.pinned ? t.pinned : t.after.data();
    uint32_t* hll = t.pinned ? t.pinned + words : t.hll_host.data();
    bool ok;
    {
      InternalCall internal;
      ScopedContext cur(drv_, t.ctx->ctx);
      // The counters as they are now, on the tracer's stream: kernels still running on the
      // job's streams are counted at the next collect (the final one waited for all).
      ok = cur.ok() && drv_.cuMemcpyDtoHAsync(after, t.exact ? t.counts : t.cms, words * 4, t.ctx->stream) == CUDA_SUCCESS &&
           (t.exact || drv_.cuMemcpyDtoHAsync(hll, t.hll, t.hll_host.size() * 4, t.ctx->stream) == CUDA_SUCCESS) &&
           drv_.cuStreamSynchronize(t.ctx->stream) == CUDA_SUCCESS;
    }
    if (!ok) {
      count_drop("device_counter_copies", 1);
      continue;
    }
    if (t.exact) {
      w.seg.before = t.mirror.data();
      w.seg.after = after;
    } else {
      w.seg.cms_before = t.mirror.data();
      w.seg.cms_after = after;
      w.seg.hll = hll;
    }
    ingest(t.id, w.seg);
    if (t.pinned) std::memcpy(t.mirror.data(), after, words * 4);  // the pinned buffer is reused
    else t.mirror.swap(t.after);
  }
}

DeviceCounting::Totals DeviceCounting::totals() const {
  std::lock_guard<std::mutex> lk(mu_);
  return totals_;
}

}  // namespace edo::capture
