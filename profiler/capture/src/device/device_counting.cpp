#include "device_counting.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "device/count_kernel.h"
#include "edo/edo.h"
#include "edo/stats/row_hash.h"
#include "registry.h"
#include "events.h"
#include "tracer_log.h"

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
  CUfunction fn = nullptr;        // edo_count
  CUfunction take_fn = nullptr;   // edo_take_dirty
  CUstream stream = nullptr;      // the tracer's own (non-blocking)
  CUdeviceptr arena = 0;
  char* host_arena = nullptr;     // pinned mirror of the arena
  uint64_t head = 0, tail = 0;    // mu_: ring allocation (monotonic byte counters)
  unsigned grid_limit = 1024;
  bool retained_primary = false;  // edo holds a retain on this (primary) context while its handles live
};

struct DeviceCounting::Table {
  // Set once by make_table(), read without a lock afterwards.
  uint32_t id = 0;
  uint64_t rows = 0;
  bool exact = true;
  Context* ctx = nullptr;  // nullptr: refused on the device
  CUdeviceptr counts = 0, cms = 0, hll = 0;
  CUdeviceptr dirty = 0;   // dirty bitmap (dirty_words), then the taken copy (dirty_words)
  uint64_t dirty_words = 0;
  uint32_t cms_width_log2 = 0, cms_depth = 0, hll_p = 0;
  uint64_t threshold = 0;
  double rate = 1.0;
  // collect_mu_: counters (or cells) at the last collect, and now. `current` is pinned host
  // memory (a copy into pageable memory is staged by the driver and blocks) laid out as
  // counters, HyperLogLog registers, taken dirty bitmap; when pinned memory was refused,
  // `current_host` holds the same. Only the blocks that changed are copied into it, so it
  // always holds every counter as of the last copy.
  std::vector<uint32_t> mirror;
  uint32_t* current = nullptr;
  std::vector<uint32_t> current_host;
  bool resync = false;  // copy every block (after a failed copy; both sides start zeroed)
  std::vector<std::pair<uint64_t, uint64_t>> runs;  // collect_mu_: word ranges copied last
  // mu_:
  uint64_t pos = 0;                            // references submitted so far
  uint64_t next_window = 0, window_need = 0;   // footprint window planning
  uint64_t windows_taken = 0;
  std::vector<uint64_t> partial;               // a window being gathered from small batches
  bool window_broken = false;                  // ignore window pieces until a window starts
  stats::CountedSegment pending;               // sample, windows, candidates since the last collect
  bool dirty_since_collect = false;
  bool in_graph = false;  // counted inside a CUDA graph capture: every replay adds to the counters

  uint64_t words() const { return exact ? rows : uint64_t{cms_depth} << cms_width_log2; }
  uint64_t hll_words() const { return exact ? 0 : uint64_t{1} << hll_p; }
};

struct DeviceCounting::Batch {
  Table* table = nullptr;
  Context* ctx = nullptr;
  uint64_t pos = 0;                // of the batch's first reference
  uint64_t off = 0, bytes = 0;     // region in the arena (byte offset, size); bytes == 0: none
  uint64_t end = 0;                // the ring's head after it (freeing it moves the tail there)
  uint32_t cap = 0, window_n = 0;
  bool window_starts = false, window_breaks = false;
  // kReserved: its lookup is launching it (pollers wait: regions are freed in order);
  // kLaunched: its events tell when it is done; kFailed: not launched, counts nothing.
  enum State : uint8_t { kReserved, kLaunched, kFailed } state = kReserved;
  CUevent kernel_done = nullptr, copied = nullptr;
};

DeviceCounting::DeviceCounting(const Driver& drv, const void* image, uint64_t arena_bytes, const stats::StatsConfig& cfg,
                               uint64_t device_budget)
    : drv_(drv), image_(image), arena_bytes_(arena_bytes & ~uint64_t{15}), cfg_(cfg), device_budget_(device_budget) {}

CUdeviceptr DeviceCounting::allocate(uint64_t bytes) {
  // Never past EDO_MAX_DEVICE_MB: the driver is not even asked. Only set-up allocates, one
  // at a time (setup_mu_), so the budget read here still holds after the driver call.
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (bytes > device_budget_ - std::min(device_budget_, totals_.device_bytes)) return 0;
  }
  CUdeviceptr p = 0;
  InternalCall internal;
  if (drv_.cuMemAlloc(&p, bytes) != CUDA_SUCCESS) return 0;
  std::lock_guard<std::mutex> lk(mu_);
  own_.insert({uint64_t(p), uint64_t(p) + bytes});
  totals_.device_bytes += bytes;
  return p;
}

bool DeviceCounting::owns(uint64_t address) const {
  // CUPTI's buffer callback asks this: mu_ is never held across a driver call, so the
  // callback never waits for a lookup, a poll or a set-up that is inside one.
  std::lock_guard<std::mutex> lk(mu_);
  auto it = own_.upper_bound({address, UINT64_MAX});
  if (it == own_.begin()) return false;
  --it;
  return address >= it->first && address < it->second;
}

// The GPU this context runs on, named once per context in the recording ("edo.gpu": the
// collector adds it to the session's GPUs), so that `edo tune` on a machine without it can model
// its times (the device profiles are keyed by this name). Called at a context's set-up, after
// the job has used CUDA there: never the first CUDA call of the process.
void DeviceCounting::note_device_name() {
  if (!drv_.cuCtxGetDevice || !drv_.cuDeviceGetName) return;
  CUdevice dev = 0;
  char name[256] = {};
  if (drv_.cuCtxGetDevice(&dev) != CUDA_SUCCESS || drv_.cuDeviceGetName(name, sizeof name - 1, dev) != CUDA_SUCCESS) return;
  if (name[0]) record_note("edo.gpu", name);
}

std::unique_ptr<DeviceCounting::Context> DeviceCounting::make_context(CUcontext ctx) {
  auto slot = std::make_unique<Context>();
  Context& c = *slot;
  c.ctx = ctx;
  InternalCall internal;
  note_device_name();
  if (drv_.cuModuleLoadData(&c.module, image_) != CUDA_SUCCESS ||
      drv_.cuModuleGetFunction(&c.fn, c.module, "edo_count") != CUDA_SUCCESS ||
      drv_.cuModuleGetFunction(&c.take_fn, c.module, "edo_take_dirty") != CUDA_SUCCESS) {
    tracer_verbose("the device counting module does not load in this context: device indices are copied to the host");
    return slot;
  }
  if (drv_.cuStreamCreate(&c.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return slot;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (arena_bytes_ > device_budget_ - std::min(device_budget_, totals_.device_bytes)) {
      count_drop("device_memory_bound_contexts", 1);
      tracer_verbose("the device counting arena does not fit EDO_MAX_DEVICE_MB: device indices are copied to the host");
      return slot;
    }
  }
  c.arena = allocate(arena_bytes_);
  if (!c.arena || drv_.cuMemHostAlloc(reinterpret_cast<void**>(&c.host_arena), arena_bytes_, 0) != CUDA_SUCCESS) {
    tracer_verbose("no memory for the device counting arena: device indices are copied to the host");
    return slot;
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    totals_.pinned_bytes += arena_bytes_;
  }
  // Set-up only: the arena starts zeroed (region headers are counters).
  if (drv_.cuMemsetD32Async(c.arena, 0, arena_bytes_ / 4, c.stream) != CUDA_SUCCESS ||
      drv_.cuStreamSynchronize(c.stream) != CUDA_SUCCESS)
    return slot;
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
  return slot;
}

std::unique_ptr<DeviceCounting::Table> DeviceCounting::make_table(const TableInfo& info, Context* c) {
  auto t = std::make_unique<Table>();
  t->id = info.id;
  t->rows = info.rows;
  t->exact = info.rows <= cfg_.exact_rows_limit;
  t->threshold = stats::counted_sample_threshold(info.rows, cfg_);
  t->rate = double(t->threshold) / double(uint64_t{1} << stats::hash::kSampleModBits);
  if (!t->exact) {
    uint32_t w = 1, lg = 0;
    while (w < cfg_.cms_width && lg < 30) w <<= 1, ++lg;
    t->cms_width_log2 = lg;
    t->cms_depth = std::max<uint32_t>(1, std::min<uint32_t>(cfg_.cms_depth, 16));
    t->hll_p = std::clamp<uint32_t>(cfg_.hll_precision, 4, 18);
  }
  const uint64_t words = t->words(), hll_words = t->hll_words();
  const uint64_t blocks = (words + (uint64_t{1} << device::kDirtyBlockShift) - 1) >> device::kDirtyBlockShift;
  t->dirty_words = (blocks + 31) / 32;
  const uint64_t need = (words + hll_words + 2 * t->dirty_words) * 4;
  bool fits;
  {
    std::lock_guard<std::mutex> lk(mu_);
    fits = need <= device_budget_ - std::min(device_budget_, totals_.device_bytes);
    if (!fits) ++totals_.bound_tables;
  }
  if (!fits) {
    // Beyond EDO_MAX_DEVICE_MB: refused on the device, never half-allocated. The table's host
    // statistics were already laid out for these counters (exact or sketch, session.cpp), so
    // its batches are copied to the host and counted there with the same statistics rather
    // than sketched here into a shape the host side does not expect.
    count_drop("device_memory_bound_tables", 1);
    tracer_verbose("a table's device counters do not fit EDO_MAX_DEVICE_MB: its device indices are copied to the host");
    return t;
  }
  if (t->exact) {
    t->counts = allocate(words * 4);
  } else {
    t->cms = allocate(words * 4);
    t->hll = allocate(hll_words * 4);
  }
  t->dirty = allocate(2 * t->dirty_words * 4);
  InternalCall internal;
  const bool ok = (t->counts || (t->cms && t->hll)) && t->dirty &&
                  drv_.cuMemsetD32Async(t->exact ? t->counts : t->cms, 0, words, c->stream) == CUDA_SUCCESS &&
                  (t->exact || drv_.cuMemsetD32Async(t->hll, 0, hll_words, c->stream) == CUDA_SUCCESS) &&
                  drv_.cuMemsetD32Async(t->dirty, 0, 2 * t->dirty_words, c->stream) == CUDA_SUCCESS &&
                  drv_.cuStreamSynchronize(c->stream) == CUDA_SUCCESS;
  if (!ok) {
    // No device memory for the counters: this table's device indices go the host-copy way.
    count_drop("device_counters_no_memory", 1);
    return t;
  }
  t->mirror.assign(words, 0);
  const uint64_t host_words = words + hll_words + t->dirty_words;
  void* pinned = nullptr;
  if (drv_.cuMemHostAlloc(&pinned, host_words * 4, 0) == CUDA_SUCCESS && pinned) {
    t->current = static_cast<uint32_t*>(pinned);
    std::memset(t->current, 0, host_words * 4);
    std::lock_guard<std::mutex> lk(mu_);
    totals_.pinned_bytes += host_words * 4;
  } else {
    t->current_host.assign(host_words, 0);
    t->current = t->current_host.data();
  }
  t->ctx = c;
  return t;
}

void DeviceCounting::set_up(CUcontext ctx, const TableInfo& info, Context*& c, Table*& t) {
  std::lock_guard<std::mutex> slk(setup_mu_);
  bool have_context, have_table;
  {
    // Another thread may have set them up meanwhile.
    std::lock_guard<std::mutex> lk(mu_);
    auto ci = contexts_.find(ctx);
    have_context = ci != contexts_.end();
    c = have_context && ci->second->usable ? ci->second.get() : nullptr;
    auto ti = tables_.find(info.id);
    have_table = ti != tables_.end();
    t = have_table && c && ti->second->ctx == c ? ti->second.get() : nullptr;
  }
  if (!have_context) {
    std::unique_ptr<Context> made = make_context(ctx);
    std::lock_guard<std::mutex> lk(mu_);
    c = made->usable ? made.get() : nullptr;
    contexts_[ctx] = std::move(made);  // kept either way: a context is tried once
  }
  if (!c || have_table) return;
  std::unique_ptr<Table> made = make_table(info, c);
  std::lock_guard<std::mutex> lk(mu_);
  t = made->ctx ? made.get() : nullptr;
  tables_[info.id] = std::move(made);  // kept either way: one context per table, tried once
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

void DeviceCounting::params_for(const Table& t, const void* indices, uint64_t n, int type, void* out) const {
  device::CountParams& p = *static_cast<device::CountParams*>(out);
  p = device::CountParams{};
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
  p.dirty = t.dirty;
  p.dirty_shift = device::kDirtyBlockShift;
}

// The kernel must not read past the caller's buffer: a fault would break the job's context.
// Its first and last bytes must both be in device memory the driver knows (a pointer it cannot
// place at all, e.g. pinned host memory, is trusted: the caller's own kernel reads it).
bool DeviceCounting::past_the_buffer(const void* indices, uint64_t n, int type) const {
  if (!drv_.cuMemGetAddressRange || n == 0) return false;
  const uint64_t a = reinterpret_cast<uint64_t>(indices), bytes = n * (type == EDO_I64 ? 8 : 4);
  CUdeviceptr base = 0;
  size_t size = 0;
  return drv_.cuMemGetAddressRange(&base, &size, CUdeviceptr(a)) == CUDA_SUCCESS && a + bytes > uint64_t(base) + size &&
         drv_.cuMemGetAddressRange(&base, &size, CUdeviceptr(a + bytes - 1)) != CUDA_SUCCESS;
}

// The context's and the table's device state, looked up under mu_ (set up, once, by set_up under
// setup_mu_ alone); false when the context is new, or usable and without this table.
bool DeviceCounting::find_state(CUcontext ctx, const TableInfo& info, Context*& c, Table*& t) {
  std::lock_guard<std::mutex> lk(mu_);
  auto ci = contexts_.find(ctx);
  auto ti = tables_.find(info.id);
  if (ci != contexts_.end() && ci->second->usable) c = ci->second.get();
  if (c && ti != tables_.end() && ti->second->ctx == c) t = ti->second.get();
  return ci != contexts_.end() && (!ci->second->usable || ti != tables_.end());
}

// The batch's sample region in the arena (mu_ held): room for its LRU sample and the footprint
// window it contributes, if one is due; none when the arena is full (counted, not sampled).
void DeviceCounting::plan_sample(Context& c, Table& t, uint64_t n, Batch& b, device::CountParams& p) {
  // Room for about twice the expected sample (thinning keeps hot rows from flooding it).
  const double r = t.rate;
  uint64_t cap = 4096 + uint64_t(2.0 * r * double(n) / (1.0 + 7.0 * r)) + (t.exact ? 0 : n / 64);
  cap = std::min<uint64_t>({cap, n, (arena_bytes_ / 4) / sizeof(device::SampleEntry)});
  // The footprint window this batch contributes, if one is due.
  uint64_t wb = 0, wn = 0;
  bool starts = false;
  if (t.window_need) {
    wn = std::min<uint64_t>(n, t.window_need);
  } else if (t.pos + n >= t.next_window) {
    wn = std::min<uint64_t>(n, stats::kCountedWindow);
    wb = n - wn;
    starts = true;
  }
  const uint64_t bytes = align8(sizeof(device::RegionHeader) + cap * sizeof(device::SampleEntry) + wn * 8);
  if (reserve(&c, bytes, b.off)) {
    b.bytes = bytes;
    b.end = c.head;
    b.cap = uint32_t(cap);
    b.window_n = uint32_t(wn);
    b.window_starts = starts;
    if (starts) t.next_window = t.pos + n + window_every(t.windows_taken++);
    p.region = c.arena + b.off;
    p.cap = b.cap;
    p.window_begin = wb;
    p.window_n = b.window_n;
    t.window_need = starts ? stats::kCountedWindow - wn : t.window_need - wn;
  } else {
    // Arena full (the host is behind): counted, not sampled.
    ++totals_.batches_without_sample;
    b.window_breaks = t.window_need || starts;
    t.window_need = 0;
  }
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
  if (past_the_buffer(indices, n, type)) {
    count_drop("device_batches_past_their_buffer", 1);
    return EDO_ERR_INVALID_ARGUMENT;
  }
  Context* c = nullptr;
  Table* t = nullptr;
  if (!find_state(ctx, info, c, t) && !capturing) set_up(ctx, info, c, t);
  if (capturing && !t) {
    // The table's first batch is inside a capture: its set-up cannot happen there, and the
    // host-copy path would put a copy and an event into the capture. Not counted (replays
    // neither); said in the report.
    count_drop("device_batches_captured_before_setup", 1);
    return EDO_OK;
  }
  if (!c || !t) return kUnavailable;
  if (capturing) return launch_captured(*c, *t, indices, n, type, stream);

  // The batch's bookkeeping under mu_ (its region, its place in the order, its positions),
  // then the driver calls with a snapshot of it (the kernel's parameters) and no lock held.
  device::CountParams p;
  params_for(*t, indices, n, type, &p);
  Batch* b;
  CUevent events[2] = {nullptr, nullptr};
  {
    std::lock_guard<std::mutex> lk(mu_);
    b = &in_flight_.emplace_back();  // a deque: the element stays where it is until popped
    b->table = t;
    b->ctx = c;
    b->pos = t->pos;
    if (cfg_.track_lru) plan_sample(*c, *t, n, *b, p);
    t->pos += n;
    for (CUevent& e : events)
      if (!free_events_.empty()) {
        e = free_events_.back();
        free_events_.pop_back();
      }
  }
  for (CUevent& e : events)
    if (!e && drv_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) e = nullptr;
  const unsigned grid = unsigned(std::clamp<uint64_t>((n + kThreads - 1) / kThreads, 1, c->grid_limit));
  void* args[] = {&p};
  const bool launched = events[0] && events[1] &&
                        drv_.cuLaunchKernel(c->fn, grid, 1, 1, kThreads, 1, 1, 0, stream, args, nullptr) == CUDA_SUCCESS;
  // From here on nothing touches the caller's stream but one event record.
  const bool tracked = launched && drv_.cuEventRecord(events[0], stream) == CUDA_SUCCESS &&
                       drv_.cuStreamWaitEvent(c->stream, events[0], 0) == CUDA_SUCCESS &&
                       (!p.region ||
                        (drv_.cuMemcpyDtoHAsync(c->host_arena + b->off, p.region, b->bytes, c->stream) == CUDA_SUCCESS &&
                         drv_.cuMemsetD32Async(p.region, 0, sizeof(device::RegionHeader) / 4, c->stream) == CUDA_SUCCESS)) &&
                       drv_.cuEventRecord(events[1], c->stream) == CUDA_SUCCESS;
  std::lock_guard<std::mutex> lk(mu_);
  b->kernel_done = events[0];
  b->copied = events[1];
  if (!launched) {
    // Nothing counted: the poller frees its region in order and gives the events back; the
    // footprint window it was part of is broken.
    b->state = Batch::kFailed;
    t->window_need = 0;
    count_drop("device_batches", 1);
    return EDO_ERR_CUDA;
  }
  b->state = Batch::kLaunched;
  t->dirty_since_collect = true;
  ++totals_.batches;
  totals_.indices += n;
  if (!tracked) count_drop("device_batches_untracked", 1);
  return tracked ? EDO_OK : EDO_ERR_CUDA;
}

int DeviceCounting::launch_captured(Context& c, Table& t, const void* indices, uint64_t n, int type, CUstream stream) {
  // The counting kernel alone, without a sample region (no copy back, no event): the counters
  // are read at each flush like any table's. The batch's positions (LRU sample, footprint
  // windows) are not known per replay, so a captured batch adds counts only.
  device::CountParams p;
  params_for(t, indices, n, type, &p);
  const unsigned grid = unsigned(std::clamp<uint64_t>((n + kThreads - 1) / kThreads, 1, c.grid_limit));
  void* args[] = {&p};
  if (drv_.cuLaunchKernel(c.fn, grid, 1, 1, kThreads, 1, 1, 0, stream, args, nullptr) != CUDA_SUCCESS) {
    count_drop("device_batches_captured", 1);
    return EDO_ERR_CUDA;
  }
  std::lock_guard<std::mutex> lk(mu_);
  t.in_graph = true;
  t.dirty_since_collect = true;
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
      if (b.window_starts) t.partial.clear(), t.window_broken = false;
      if (!t.window_broken) t.partial.insert(t.partial.end(), w, w + b.window_n);
      if (t.partial.size() >= stats::kCountedWindow) {
        t.pending.windows.emplace_back(t.partial.begin(), t.partial.begin() + stats::kCountedWindow);
        t.partial.clear();
      }
    }
    c.tail = b.end;  // regions are freed in the order they were taken
  } else if (b.window_breaks) {
    t.partial.clear();
    t.window_broken = true;
  }
  t.dirty_since_collect = true;
  free_events_.push_back(b.kernel_done);
  free_events_.push_back(b.copied);
}

void DeviceCounting::drop(Batch& b) {
  // Launched but its copy never finished (the context is gone or broken), or never launched:
  // its region is freed in order, the window it was part of is broken.
  if (b.bytes) b.ctx->tail = b.end;
  if (b.bytes || b.window_breaks) {
    b.table->partial.clear();
    b.table->window_broken = true;
  }
  for (CUevent e : {b.kernel_done, b.copied})
    if (e) free_events_.push_back(e);
}

void DeviceCounting::poll(bool wait_all) {
  // One poller at a time (poll_mu_ is taken by nothing else): the front batch stays the front
  // while its event is queried without mu_, which lookups and take() need.
  std::lock_guard<std::mutex> plk(poll_mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (true) {
    {
      CUevent copied = nullptr;
      CUcontext ctx = nullptr;
      bool reserved = false;
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (in_flight_.empty()) return;
        Batch& b = in_flight_.front();
        if (b.state == Batch::kFailed) {
          drop(b);
          in_flight_.pop_front();
          continue;
        }
        reserved = b.state == Batch::kReserved;  // its lookup is still launching it
        copied = b.copied;
        ctx = b.ctx->ctx;
      }
      if (!reserved) {
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
            drop(b);
          }
          in_flight_.pop_front();
          continue;
        }
      }
    }
    if (!wait_all || std::chrono::steady_clock::now() > deadline) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

bool DeviceCounting::copy_counters(Table& t) {
  const uint64_t words = t.words(), hll_words = t.hll_words();
  uint32_t* current = t.current;
  uint32_t* taken = current + words + hll_words;
  InternalCall internal;
  ScopedContext cur(drv_, t.ctx->ctx);
  if (!cur.ok()) return false;
  // The dirty bitmap first, taken and cleared in one step on the device (edo_take_dirty), on
  // the tracer's stream: blocks a kernel touches from then on are in the next collect.
  device::TakeDirtyParams tp{t.dirty, t.dirty + t.dirty_words * 4, t.dirty_words};
  void* args[] = {&tp};
  const unsigned grid = unsigned(std::clamp<uint64_t>((t.dirty_words + kThreads - 1) / kThreads, 1, 1024));
  if (drv_.cuLaunchKernel(t.ctx->take_fn, grid, 1, 1, kThreads, 1, 1, 0, t.ctx->stream, args, nullptr) != CUDA_SUCCESS ||
      drv_.cuMemcpyDtoHAsync(taken, tp.out, t.dirty_words * 4, t.ctx->stream) != CUDA_SUCCESS ||
      drv_.cuStreamSynchronize(t.ctx->stream) != CUDA_SUCCESS)
    return false;
  // Consecutive dirty blocks are copied as one range (a block's counters were updated before
  // its bit was set: the kernel fences in between).
  t.runs.clear();
  const uint64_t blocks = (words + (uint64_t{1} << device::kDirtyBlockShift) - 1) >> device::kDirtyBlockShift;
  for (uint64_t blk = 0; blk < blocks; ++blk) {
    if (!t.resync && !(taken[blk >> 5] >> (blk & 31) & 1u)) continue;
    const uint64_t begin = blk << device::kDirtyBlockShift;
    const uint64_t end = std::min(words, (blk + 1) << device::kDirtyBlockShift);
    if (!t.runs.empty() && t.runs.back().second == begin) t.runs.back().second = end;
    else t.runs.emplace_back(begin, end);
  }
  const CUdeviceptr counters = t.exact ? t.counts : t.cms;
  for (const auto& [begin, end] : t.runs)
    if (drv_.cuMemcpyDtoHAsync(current + begin, counters + begin * 4, (end - begin) * 4, t.ctx->stream) != CUDA_SUCCESS)
      return false;
  // The HyperLogLog registers (64 KiB at the default precision) are copied whole.
  if (!t.exact && drv_.cuMemcpyDtoHAsync(current + words, t.hll, hll_words * 4, t.ctx->stream) != CUDA_SUCCESS) return false;
  return drv_.cuStreamSynchronize(t.ctx->stream) == CUDA_SUCCESS;
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
      if (!t->ctx || !(t->dirty_since_collect || t->in_graph)) continue;
      work.push_back({t.get(), std::move(t->pending)});
      t->pending = stats::CountedSegment{};
      t->dirty_since_collect = false;
    }
  }
  for (Work& w : work) {
    Table& t = *w.t;
    // The counters as they are now, on the tracer's stream: kernels still running on the
    // job's streams are counted at the next collect (the final one waited for all).
    if (!copy_counters(t)) {
      // What was taken of the bitmap is lost with the copy: the next copy takes every block.
      t.resync = true;
      count_drop("device_counter_copies", 1);
      continue;
    }
    t.resync = false;
    const uint64_t words = t.words();
    if (t.exact) {
      w.seg.before = t.mirror.data();
      w.seg.after = t.current;
    } else {
      w.seg.cms_before = t.mirror.data();
      w.seg.cms_after = t.current;
      w.seg.hll = t.current + words;
    }
    ingest(t.id, w.seg);
    // The counters not copied are as they were: only the copied ranges move on.
    for (const auto& [begin, end] : t.runs)
      std::memcpy(t.mirror.data() + begin, t.current + begin, (end - begin) * 4);
  }
}

DeviceCounting::Totals DeviceCounting::totals() const {
  std::lock_guard<std::mutex> lk(mu_);
  return totals_;
}

}  // namespace edo::capture
