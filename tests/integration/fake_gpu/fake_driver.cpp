// Fake libcuda.so.1 (see fake_cuda.h): the driver entry points the tracer and the fake runtime
// use. Device memory is host memory, every stream runs synchronously, kernels are host
// functions. Each call is reported to the tool (fake libcupti) like the real driver does.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device/count_kernel.h"
#include "fake_capture.h"
#include "fake_cuda.h"

#define FAKE_API extern "C" __attribute__((visibility("default")))

struct fake_kernel {
  uint32_t magic = 0xFA4EC0DE;  // a CUfunction points here
  std::string name;
  fake_kernel_body body = nullptr;
  std::vector<size_t> offsets, sizes;
  // The kernel's CUkernel: another handle (library-based loading, cuda.h's CUkernel), which the
  // driver launches when it is cast to a CUfunction but describes only through cuKernel* calls.
  struct Handle {
    uint32_t magic = 0xC0CE4E1;
    fake_kernel* k = nullptr;
  } as_kernel;
};

namespace {

std::mutex mu;
const fake_cuda_tool* tool = nullptr;
// mu: address -> bytes. Never destroyed: device memory a job never frees is the driver's until
// the process is gone (process teardown frees it), so it stays reachable through the exit
// handlers, where LeakSanitizer looks (a map destroyed with the other statics would turn every
// unfreed cudaMalloc into a "leak" of the fake's).
std::map<uint64_t, uint64_t>& live = *new std::map<uint64_t, uint64_t>;
uint64_t live_total = 0, live_peak = 0;                  // mu: bytes in `live`, and their peak
std::map<std::string, fake_kernel*> module_functions;    // mu
// Every kernel object made (by module loads and runtime registrations): the driver owns them
// until the process exits, as the real one owns its CUfunction/CUkernel handles (an
// application never frees one: cuda.h has no call for it; cuModuleUnload invalidates them).
std::vector<std::unique_ptr<fake_kernel>> kernels;       // mu
// Every stream handle made: owned until the process exits (a destroyed stream's handle stays,
// as fake_capture may still know it). Jobs commonly exit without cuStreamDestroy: the real
// driver frees a context's streams with the context (cuCtxDestroy / process teardown, CUDA
// driver API "Stream Management"), so a leak report for them would be the fake's, not the job's.
std::vector<std::unique_ptr<int>> streams;               // mu
uint32_t next_correlation = 1;                           // mu
thread_local int in_callback = 0;
// cuInit: the driver reads CUDA_VISIBLE_DEVICES then. A job may set it after loading CUDA's
// libraries and before its first CUDA call; a tool that calls the driver before the job does
// would fix the devices first (cuda.h: every call but cuInit / cuDriverGetVersion needs
// cuInit first). Calls made before cuInit are counted.
std::atomic<bool> initialized{false};
std::atomic<uint64_t> calls_before_init{0};
void touched() {
  if (!initialized.load(std::memory_order_relaxed)) calls_before_init.fetch_add(1);
}
thread_local uint32_t outer_correlation = 0;  // the API call the application made (runtime or driver)
int fake_context_storage, fake_other_context_storage;
CUcontext fake_context = reinterpret_cast<CUcontext>(&fake_context_storage);  // device 0's primary context
CUcontext fake_other_context = reinterpret_cast<CUcontext>(&fake_other_context_storage);  // a cuCtxCreate'd one
// The calling thread's context stack (cuda.h cuCtxPushCurrent/cuCtxPopCurrent/cuCtxSetCurrent:
// SetCurrent replaces the top). Every thread starts with the primary context current, as if
// the job's runtime had made it so; `pushed` counts the pushes not yet popped.
// Trivially destructible (no thread_local destructor): edo's exit handlers still use it.
struct CtxStack {
  CUcontext at[64];
  int n = -1;  // -1: not set up yet on this thread (the primary context is current)
  void init() {
    if (n < 0) at[0] = fake_context, n = 1;
  }
};
thread_local CtxStack ctx_stack;
thread_local int pushed = 0;
CUcontext current_ctx() {
  ctx_stack.init();
  return ctx_stack.n ? ctx_stack.at[ctx_stack.n - 1] : nullptr;
}
std::map<CUstream, CUcontext> stream_ctx;   // mu: the context current when each stream was created
std::atomic<uint64_t> unbalanced_pops{0};   // pops without a push (they take the caller's context away)
std::atomic<uint64_t> wrong_context{0};     // launches on a stream of another context than the current one
std::atomic<int> primary_retains{1};        // the job's runtime holds one
// The context a stream belongs to (cuda.h:15134-15147); the special streams: the current one.
CUcontext context_of(CUstream s) {
  if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) return current_ctx();
  std::lock_guard<std::mutex> lk(mu);
  auto it = stream_ctx.find(s);
  return it == stream_ctx.end() ? current_ctx() : it->second;
}

uint64_t now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch()).count());
}

// The kernel behind a CUfunction or a CUkernel handle (launches accept both).
fake_kernel* kernel_of(const void* h) {
  if (!h) return nullptr;
  const uint32_t magic = *static_cast<const uint32_t*>(h);
  if (magic == 0xFA4EC0DE) return static_cast<fake_kernel*>(const_cast<void*>(h));
  if (magic == 0xC0CE4E1) return static_cast<const fake_kernel::Handle*>(h)->k;
  return nullptr;
}
bool is_cukernel(const void* h) { return h && *static_cast<const uint32_t*>(h) == 0xC0CE4E1; }

// One driver API call: ENTER callback, the work, EXIT callback (with the result).
template <class Params, class Work>
CUresult driver_call(CUpti_CallbackId cbid, const char* name, Params& p, const char* symbol, Work work) {
  const uint32_t corr = fake_cuda_next_correlation();
  const uint32_t saved_outer = outer_correlation;
  if (!outer_correlation) outer_correlation = corr;
  CUresult r = CUDA_SUCCESS;
  fake_cuda_report(CUPTI_CB_DOMAIN_DRIVER_API, cbid, CUPTI_API_ENTER, name, &p, &r, symbol, corr);
  r = work();
  fake_cuda_report(CUPTI_CB_DOMAIN_DRIVER_API, cbid, CUPTI_API_EXIT, name, &p, &r, symbol, corr);
  outer_correlation = saved_outer;
  return r;
}

void execute(fake_kernel* k, unsigned gx, unsigned bx, void** args, uint32_t corr);

// A launch on stream `s`: run now, or recorded into the stream's capture with a copy of its
// argument values (a graph replays the values it was captured with).
CUresult run_kernel(fake_kernel* k, unsigned gx, unsigned bx, void** params, void** extra, uint32_t corr,
                    CUstream s) {
  if (!k) return CUDA_ERROR_INVALID_HANDLE;
  std::vector<void*> args(k->offsets.size());
  if (params) {
    for (size_t i = 0; i < args.size(); ++i) args[i] = params[i];
  } else if (extra) {
    char* buffer = nullptr;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2)
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = static_cast<char*>(extra[i + 1]);
    if (!buffer) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < args.size(); ++i) args[i] = buffer + k->offsets[i];
  } else if (!args.empty()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::vector<std::vector<char>> values(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const char* a = static_cast<const char*>(args[i]);
    values[i].assign(a, a + k->sizes[i]);
  }
  CUresult r = CUDA_SUCCESS;
  if (fake_capture::capture_work(s, [k, gx, bx, values](uint32_t c) mutable {
        std::vector<void*> v(values.size());
        for (size_t i = 0; i < v.size(); ++i) v[i] = values[i].data();
        execute(k, gx, bx, v.data(), c);
      }, &r))
    return r;
  execute(k, gx, bx, args.data(), corr);
  return CUDA_SUCCESS;
}

void execute(fake_kernel* k, unsigned gx, unsigned bx, void** args, uint32_t corr) {
  const uint64_t start = now_ns();
  k->body(args, gx, bx);
  const uint64_t end = std::max(now_ns(), start + 1);
  const fake_cuda_tool* t;
  {
    std::lock_guard<std::mutex> lk(mu);
    t = tool;
  }
  if (t && t->kernel_record) t->kernel_record(k->name.c_str(), start, end, corr);
}

void memory_record(bool alloc, uint64_t address, uint64_t bytes) {
  const fake_cuda_tool* t;
  {
    std::lock_guard<std::mutex> lk(mu);
    t = tool;
  }
  if (t && t->memory_record) t->memory_record(alloc, address, bytes, outer_correlation);
}

}  // namespace

// The tracer's counting kernel, "loaded" from any module image: the same per-index code as
// the CUDA kernel (device/count_kernel.h), run over the whole batch on the host.
void edo_count_body(void** args, unsigned, unsigned) {
  edo::capture::device::CountParams p;
  std::memcpy(&p, args[0], sizeof p);
  for (uint64_t i = 0; i < p.n; ++i) edo::capture::device::count_index(p, i);
}
// Its dirty-bitmap exchange (count_kernels.cu's edo_take_dirty), the same per-word code.
void edo_take_dirty_body(void** args, unsigned, unsigned) {
  edo::capture::device::TakeDirtyParams p;
  std::memcpy(&p, args[0], sizeof p);
  for (uint64_t i = 0; i < p.words; ++i) edo::capture::device::take_dirty_word(p, i);
}

// ---- the fakes' private interface ----------------------------------------------------------------
FAKE_API fake_kernel* fake_cuda_kernel(const char* name, fake_kernel_body body, const size_t* offsets,
                                       const size_t* sizes, int n) {
  auto* k = new fake_kernel();
  k->as_kernel.k = k;
  k->name = name;
  k->body = body;
  k->offsets.assign(offsets, offsets + n);
  k->sizes.assign(sizes, sizes + n);
  std::lock_guard<std::mutex> lk(mu);
  kernels.emplace_back(k);
  return k;
}

FAKE_API void fake_cuda_register_module_function(const char* name, fake_kernel* k) {
  std::lock_guard<std::mutex> lk(mu);
  module_functions[name] = k;
}

FAKE_API void fake_cuda_set_tool(const fake_cuda_tool* t) {
  std::lock_guard<std::mutex> lk(mu);
  tool = t;
}

FAKE_API void fake_cuda_report(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
                               const char* function, const void* params, void* rv, const char* symbol,
                               uint32_t correlation) {
  const fake_cuda_tool* t;
  {
    std::lock_guard<std::mutex> lk(mu);
    t = tool;
  }
  if (!t || !t->callback) return;
  ++in_callback;
  t->callback(domain, cbid, site, function, params, rv, symbol, correlation);
  --in_callback;
}

FAKE_API uint32_t fake_cuda_next_correlation() {
  std::lock_guard<std::mutex> lk(mu);
  return next_correlation++;
}

FAKE_API int fake_cuda_in_callback(void) { return in_callback; }

FAKE_API uint32_t fake_cuda_set_outer_correlation(uint32_t c) {
  const uint32_t old = outer_correlation;
  outer_correlation = c;
  return old;
}

FAKE_API CUresult fake_cuda_run(fake_kernel* k, unsigned gx, unsigned bx, void** args, uint32_t corr, CUstream s) {
  return run_kernel(k, gx, bx, args, nullptr, corr, s);
}

// Stream capture and graphs for the fake runtime: the same work as the driver entry points,
// without driver callbacks (the real runtime's internal driver calls issue none).
FAKE_API CUresult fake_cuda_begin_capture(CUstream s, CUstreamCaptureMode mode) { return fake_capture::begin(s, mode); }
FAKE_API CUresult fake_cuda_end_capture(CUstream s, CUgraph* g) { return fake_capture::end(s, g); }
FAKE_API CUresult fake_cuda_instantiate(CUgraphExec* e, CUgraph g) { return fake_capture::instantiate(e, g); }
FAKE_API CUresult fake_cuda_graph_launch(CUgraphExec e, CUstream s, uint32_t corr) {
  return fake_capture::launch(e, s, corr);
}
FAKE_API CUresult fake_cuda_is_capturing(CUstream s, CUstreamCaptureStatus* st) {
  return fake_capture::is_capturing(s, st, nullptr);
}
FAKE_API uint64_t fake_cuda_foreign_calls(void) { return fake_capture::foreign_calls(); }

FAKE_API fake_kernel* fake_cuda_kernel_of(const void* handle) { return kernel_of(handle); }
// After a module unload the driver may hand the same address to another kernel: `k` becomes it.
FAKE_API void fake_cuda_reuse_kernel(fake_kernel* k, const char* name, fake_kernel_body body, const size_t* offsets,
                                     const size_t* sizes, int n) {
  k->name = name;
  k->body = body;
  k->offsets.assign(offsets, offsets + n);
  k->sizes.assign(sizes, sizes + n);
}
FAKE_API CUkernel fake_cuda_cukernel(fake_kernel* k) { return reinterpret_cast<CUkernel>(&k->as_kernel); }

FAKE_API uint64_t fake_cuda_live_bytes(void) {
  std::lock_guard<std::mutex> lk(mu);
  uint64_t n = 0;
  for (const auto& [a, b] : live) n += b;
  return n;
}

FAKE_API uint64_t fake_cuda_peak_bytes(void) {
  std::lock_guard<std::mutex> lk(mu);
  return live_peak;
}

// ---- driver API ------------------------------------------------------------------------------------
FAKE_API CUresult cuInit(unsigned) {
  initialized.store(true);
  return CUDA_SUCCESS;
}
FAKE_API uint64_t fake_cuda_calls_before_init(void) { return calls_before_init.load(); }
FAKE_API int fake_cuda_tool_attached(void) {
  std::lock_guard<std::mutex> lk(mu);
  return tool != nullptr;
}
FAKE_API CUresult cuDriverGetVersion(int* v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = 13000;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuCtxGetCurrent(CUcontext* c) {
  touched();
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  *c = current_ctx();
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuCtxSetCurrent(CUcontext c) {
  ctx_stack.init();
  if (ctx_stack.n == 0) ctx_stack.n = 1;
  ctx_stack.at[ctx_stack.n - 1] = c;
  return CUDA_SUCCESS;
}
// FAKE_CUDA_PUSH_FAILS=1: every push fails (a context destroyed under the caller, a
// CUDA_ERROR_INVALID_CONTEXT from the real driver).
FAKE_API CUresult cuCtxPushCurrent_v2(CUcontext c) {
  touched();
  fake_capture::note_call();
  if (const char* f = std::getenv("FAKE_CUDA_PUSH_FAILS"); f && *f == '1') return CUDA_ERROR_INVALID_CONTEXT;
  ctx_stack.init();
  if (!c || ctx_stack.n == 64) return CUDA_ERROR_INVALID_CONTEXT;
  ctx_stack.at[ctx_stack.n++] = c;
  ++pushed;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuCtxPopCurrent_v2(CUcontext* c) {
  ctx_stack.init();
  if (ctx_stack.n == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (pushed == 0) unbalanced_pops.fetch_add(1);
  else --pushed;
  if (c) *c = ctx_stack.at[--ctx_stack.n];
  else --ctx_stack.n;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuStreamGetCtx(CUstream s, CUcontext* c) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  *c = context_of(s);
  return *c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
FAKE_API CUresult cuDevicePrimaryCtxGetState(CUdevice, unsigned* flags, int* active) {
  if (flags) *flags = 0;
  if (active) *active = primary_retains.load() > 0;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  primary_retains.fetch_add(1);
  *c = fake_context;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice) {
  return primary_retains.fetch_sub(1) > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
FAKE_API CUcontext fake_cuda_other_context(void) { return fake_other_context; }
FAKE_API uint64_t fake_cuda_unbalanced_pops(void) { return unbalanced_pops.load(); }
FAKE_API uint64_t fake_cuda_wrong_context_launches(void) { return wrong_context.load(); }
FAKE_API int fake_cuda_primary_retains(void) { return primary_retains.load(); }
// cuda.h:5349 CUresult cuDeviceGetName(char *name, int len, CUdevice dev): the device's ASCII
// name, NUL-terminated within len. FAKE_CUDA_DEVICE_NAME names the fake device (default
// "Fake CUDA Device"), so a test can pose as a GPU edo has a stored profile of.
FAKE_API CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  const char* env = std::getenv("FAKE_CUDA_DEVICE_NAME");
  std::snprintf(name, static_cast<size_t>(len), "%s", env && *env ? env : "Fake CUDA Device");
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuCtxGetDevice(CUdevice* d) {
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  *d = 0;
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  touched();
  cuMemAlloc_v2_params p{dptr, bytes};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2", p, nullptr, [&] {
    if (!dptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult u = fake_capture::unsafe_call(); u != CUDA_SUCCESS) return u;
    void* m = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    std::memset(m, 0xA5, bytes);  // uninitialised device memory is not zero
    *dptr = reinterpret_cast<CUdeviceptr>(m);
    {
      std::lock_guard<std::mutex> lk(mu);
      live[*dptr] = bytes;
      live_total += bytes;
      live_peak = std::max(live_peak, live_total);
    }
    memory_record(true, *dptr, bytes);
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
  cuMemFree_v2_params p{dptr};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2", p, nullptr, [&] {
    if (CUresult u = fake_capture::unsafe_call(); u != CUDA_SUCCESS) return u;
    uint64_t bytes = 0;
    {
      std::lock_guard<std::mutex> lk(mu);
      auto it = live.find(dptr);
      if (it == live.end()) return CUDA_ERROR_INVALID_VALUE;
      bytes = it->second;
      live_total -= bytes;
      live.erase(it);
    }
    std::free(reinterpret_cast<void*>(dptr));
    memory_record(false, dptr, bytes);
    return CUDA_SUCCESS;
  });
}

// Pinned host memory (cuMemHostAlloc), by address: a device-to-host copy into anything else is
// a copy into pageable memory, which the real driver stages through its own pinned buffer and
// runs synchronously (CUDA Programming Guide, "Asynchronous Concurrent Execution": host memory
// must be page-locked for cudaMemcpyAsync to overlap). FAKE_CUDA_REPORT_COPIES=1: the bytes so
// copied are printed at exit ("fake_cuda_pageable_dtoh_bytes N"), after the tool's last flush,
// and so are all device-to-host bytes copied by cuMemcpyDtoHAsync ("fake_cuda_dtoh_bytes N").
std::map<uint64_t, uint64_t> pinned_host;  // mu: address -> bytes
std::atomic<uint64_t> pageable_dtoh{0}, all_dtoh{0};
bool is_pinned(const void* p, size_t n) {
  std::lock_guard<std::mutex> lk(mu);
  const uint64_t a = reinterpret_cast<uint64_t>(p);
  auto it = pinned_host.upper_bound(a);
  if (it == pinned_host.begin()) return false;
  --it;
  return a + n <= it->first + it->second;
}
__attribute__((constructor)) void report_copies_at_exit() {
  if (const char* on = std::getenv("FAKE_CUDA_REPORT_COPIES"); on && *on == '1')
    std::atexit([] {
      std::fprintf(stderr, "fake_cuda_pageable_dtoh_bytes %llu\n", (unsigned long long)pageable_dtoh.load());
      std::fprintf(stderr, "fake_cuda_dtoh_bytes %llu\n", (unsigned long long)all_dtoh.load());
    });
}

FAKE_API CUresult cuMemHostAlloc(void** p, size_t bytes, unsigned) {
  touched();
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult u = fake_capture::unsafe_call(); u != CUDA_SUCCESS) return u;
  *p = std::malloc(bytes ? bytes : 1);
  if (!*p) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lk(mu);
  pinned_host[reinterpret_cast<uint64_t>(*p)] = bytes ? bytes : 1;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuMemFreeHost(void* p) {
  {
    std::lock_guard<std::mutex> lk(mu);
    pinned_host.erase(reinterpret_cast<uint64_t>(p));
  }
  std::free(p);
  return CUDA_SUCCESS;
}

// Stream-ordered copies and fills: run now, or recorded into the stream's capture.
template <class F>
CUresult stream_work(CUstream s, F f) {
  CUresult r = CUDA_SUCCESS;
  if (fake_capture::capture_work(s, [f](uint32_t) { f(); }, &r)) return r;
  f();
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  fake_capture::note_call();
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  if (!is_pinned(dst, n)) pageable_dtoh.fetch_add(n);
  all_dtoh.fetch_add(n);
  return stream_work(s, [=] { std::memcpy(dst, reinterpret_cast<const void*>(src), n); });
}
FAKE_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  return stream_work(s, [=] { std::memcpy(reinterpret_cast<void*>(dst), src, n); });
}
FAKE_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  return stream_work(s, [=] { std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n); });
}
FAKE_API CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned v, size_t n, CUstream s) {
  if (!dst) return CUDA_ERROR_INVALID_VALUE;
  return stream_work(s, [=] {
    auto* p = reinterpret_cast<unsigned*>(dst);
    for (size_t i = 0; i < n; ++i) p[i] = v;
  });
}
FAKE_API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  if (!dst) return CUDA_ERROR_INVALID_VALUE;
  return stream_work(s, [=] { std::memset(reinterpret_cast<void*>(dst), v, n); });
}

// Events and streams: everything has finished by the time a call returns.
FAKE_API CUresult cuEventCreate(CUevent* e, unsigned) {
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  *e = reinterpret_cast<CUevent>(new int(0));
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuEventRecord(CUevent e, CUstream s) { return fake_capture::event_record(e, s); }
std::atomic<uint64_t> event_queries{0}, blocked_deliveries{0};
std::atomic<bool> delivered_in_query{false}, delivered_in_launch{false};
FAKE_API uint64_t fake_cuda_event_queries(void) { return event_queries.load(); }
FAKE_API uint64_t fake_cuda_blocked_deliveries(void) { return blocked_deliveries.load(); }

// FAKE_CUPTI_DELIVER_IN_QUERY / FAKE_CUPTI_DELIVER_IN_LAUNCH (fake_cuda.h): the first such
// driver call waits for a delivery on another thread.
void deliver_during_call(const char* setting, std::atomic<bool>& once) {
  const char* on = std::getenv(setting);
  if (!on || *on != '1' || once.exchange(true)) return;
  const fake_cuda_tool* t;
  {
    std::lock_guard<std::mutex> lk(mu);
    t = tool;
  }
  if (!t || !t->deliver) return;
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread worker([t, done] {
    t->deliver();
    done->store(true);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done->load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (done->load()) {
    worker.join();
  } else {
    blocked_deliveries.fetch_add(1);  // the tool's buffer callback waited for this query
    worker.detach();
  }
}

FAKE_API CUresult cuEventQuery(CUevent e) {
  touched();
  fake_capture::note_call();
  deliver_during_call("FAKE_CUPTI_DELIVER_IN_QUERY", delivered_in_query);
  const CUresult r = fake_capture::event_query(e);
  event_queries.fetch_add(1);
  return r;
}
FAKE_API CUresult cuEventSynchronize(CUevent e) { return fake_capture::event_query(e); }
FAKE_API CUresult cuEventDestroy_v2(CUevent e) {
  fake_capture::event_destroyed(e);
  delete reinterpret_cast<int*>(e);
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuStreamCreate(CUstream* s, unsigned flags) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lk(mu);
    streams.push_back(std::make_unique<int>(0));
    *s = reinterpret_cast<CUstream>(streams.back().get());
    stream_ctx[*s] = current_ctx();
  }
  fake_capture::stream_created(*s, flags);
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuStreamDestroy_v2(CUstream s) {
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  {
    std::lock_guard<std::mutex> lk(mu);
    stream_ctx.erase(s);
  }
  return CUDA_SUCCESS;  // the handle's memory stays: fake_capture may still know it
}
FAKE_API CUresult cuStreamSynchronize(CUstream s) {
  touched();
  fake_capture::note_call();
  return fake_capture::stream_synchronize(s);
}
FAKE_API CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned) { return fake_capture::stream_wait_event(s, e); }
FAKE_API CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? 4 : 0;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  std::lock_guard<std::mutex> lk(mu);
  auto it = live.upper_bound(p);
  if (it == live.begin()) return CUDA_ERROR_NOT_FOUND;
  --it;
  if (p >= it->first + it->second) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = it->first;
  if (size) *size = it->second;
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus* st) {
  touched();
  return fake_capture::is_capturing(s, st, nullptr);
}
FAKE_API CUresult cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus* st, cuuint64_t* id, CUgraph* graph,
                                            const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* ndeps) {
  touched();
  if (graph) *graph = nullptr;
  if (deps) *deps = nullptr;
  if (edges) *edges = nullptr;
  if (ndeps) *ndeps = 0;
  return fake_capture::is_capturing(s, st, id);
}
FAKE_API CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  touched();
  return fake_capture::exchange_mode(mode);
}
FAKE_API CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
  cuStreamBeginCapture_v2_params p{s, mode};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, "cuStreamBeginCapture_v2", p, nullptr,
                     [&] { return fake_capture::begin(s, mode); });
}
FAKE_API CUresult cuStreamEndCapture(CUstream s, CUgraph* g) {
  cuStreamEndCapture_params p{s, g};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, "cuStreamEndCapture", p, nullptr,
                     [&] { return fake_capture::end(s, g); });
}
FAKE_API CUresult cuGraphInstantiateWithFlags(CUgraphExec* e, CUgraph g, unsigned long long flags) {
  cuGraphInstantiateWithFlags_params p{e, g, flags};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", p, nullptr,
                     [&] { return fake_capture::instantiate(e, g); });
}
FAKE_API CUresult cuGraphLaunch(CUgraphExec e, CUstream s) {
  cuGraphLaunch_params p{e, s};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch", p, nullptr,
                     [&] { return fake_capture::launch(e, s, outer_correlation); });
}
FAKE_API CUresult cuGraphDestroy(CUgraph g) { return fake_capture::graph_destroy(g); }
FAKE_API CUresult cuGraphExecDestroy(CUgraphExec e) { return fake_capture::exec_destroy(e); }

// Kernels.
// A parameter query that takes its time (fake_cuda_hold_param_info): the kernel whose queries
// wait, and the callers waiting now. No lock of the fake's is held while waiting.
std::atomic<fake_kernel*> held_kernel{nullptr};
std::atomic<int> held_waiting{0};
void wait_if_held(fake_kernel* k) {
  if (!k || held_kernel.load() != k) return;
  held_waiting.fetch_add(1);
  while (held_kernel.load() == k) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  held_waiting.fetch_sub(1);
}
FAKE_API void fake_cuda_hold_param_info(fake_kernel* k) { held_kernel.store(k); }
FAKE_API int fake_cuda_param_info_waiting(void) { return held_waiting.load(); }
FAKE_API void fake_cuda_release_param_info(void) { held_kernel.store(nullptr); }

FAKE_API CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t* off, size_t* size) {
  touched();
  wait_if_held(is_cukernel(f) ? nullptr : kernel_of(f));
  // A CUkernel passed as a CUfunction: CUDA_ERROR_INVALID_VALUE at index 0, the answer a kernel
  // without parameters gives (issue 21.2, from a review against the real driver).
  if (is_cukernel(f)) return CUDA_ERROR_INVALID_VALUE;
  fake_kernel* k = kernel_of(f);
  if (!k) return CUDA_ERROR_INVALID_HANDLE;
  if (i >= k->offsets.size() || !off || !size) return CUDA_ERROR_INVALID_VALUE;
  *off = k->offsets[i];
  *size = k->sizes[i];
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuKernelGetParamInfo(CUkernel kernel, size_t i, size_t* off, size_t* size) {
  touched();
  if (!is_cukernel(kernel)) return CUDA_ERROR_INVALID_HANDLE;
  fake_kernel* k = kernel_of(kernel);
  wait_if_held(k);
  if (i >= k->offsets.size() || !off || !size) return CUDA_ERROR_INVALID_VALUE;
  *off = k->offsets[i];
  *size = k->sizes[i];
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuKernelGetName(const char** name, CUkernel kernel) {
  if (!is_cukernel(kernel) || !name) return CUDA_ERROR_INVALID_HANDLE;
  *name = kernel_of(kernel)->name.c_str();
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuFuncGetName(const char** name, CUfunction f) {
  fake_kernel* k = is_cukernel(f) ? nullptr : kernel_of(f);
  if (!k || !name) return CUDA_ERROR_INVALID_HANDLE;
  *name = k->name.c_str();
  return CUDA_SUCCESS;
}

FAKE_API CUresult cuModuleLoadData(CUmodule* m, const void* image) {
  touched();
  if (!m || !image) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult u = fake_capture::unsafe_call(); u != CUDA_SUCCESS) return u;
  // FAKE_CUDA_NO_MODULES=1: like a driver too old for the image.
  if (const char* no = std::getenv("FAKE_CUDA_NO_MODULES"); no && *no == '1') return CUDA_ERROR_NO_BINARY_FOR_GPU;
  *m = reinterpret_cast<CUmodule>(new int(0));
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  if (!f || !m || !name) return CUDA_ERROR_INVALID_VALUE;
  static fake_kernel* const edo_count = [] {
    const size_t off[] = {0}, size[] = {sizeof(edo::capture::device::CountParams)};
    return fake_cuda_kernel("edo_count", edo_count_body, off, size, 1);
  }();
  static fake_kernel* const edo_take_dirty = [] {
    const size_t off[] = {0}, size[] = {sizeof(edo::capture::device::TakeDirtyParams)};
    return fake_cuda_kernel("edo_take_dirty", edo_take_dirty_body, off, size, 1);
  }();
  std::lock_guard<std::mutex> lk(mu);
  module_functions.emplace("edo_count", edo_count);
  module_functions.emplace("edo_take_dirty", edo_take_dirty);
  auto it = module_functions.find(name);
  if (it == module_functions.end()) return CUDA_ERROR_NOT_FOUND;
  *f = reinterpret_cast<CUfunction>(it->second);
  return CUDA_SUCCESS;
}
FAKE_API CUresult cuModuleUnload(CUmodule m) {
  cuModuleUnload_params p{m};
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuModuleUnload, "cuModuleUnload", p, nullptr, [&] {
    delete reinterpret_cast<int*>(m);
    return CUDA_SUCCESS;
  });
}

FAKE_API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shmem, CUstream s, void** params, void** extra) {
  cuLaunchKernel_params p{f, gx, gy, gz, bx, by, bz, shmem, s, params, extra};
  fake_kernel* k = kernel_of(f);
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", p, k ? k->name.c_str() : nullptr, [&] {
    // A stream of another context than the current one: the real driver refuses the launch.
    if (context_of(s) != current_ctx()) {
      wrong_context.fetch_add(1);
      return CUDA_ERROR_INVALID_HANDLE;
    }
    // FAKE_CUPTI_DELIVER_IN_LAUNCH: the tracer's first counting launch waits for a delivery.
    if (k && k->name == "edo_count") deliver_during_call("FAKE_CUPTI_DELIVER_IN_LAUNCH", delivered_in_launch);
    return run_kernel(k, gx, bx, params, extra, outer_correlation, s);
  });
}

FAKE_API CUresult cuLaunchKernelEx(const CUlaunchConfig* cfg, CUfunction f, void** params, void** extra) {
  cuLaunchKernelEx_params p{cfg, f, params, extra};
  fake_kernel* k = kernel_of(f);
  return driver_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx", p, k ? k->name.c_str() : nullptr, [&] {
    if (!cfg) return CUDA_ERROR_INVALID_VALUE;
    return run_kernel(k, cfg->gridDimX, cfg->blockDimX, params, extra, outer_correlation, cfg->hStream);
  });
}
