// A "GPU" job on the fake CUDA stack (fake_cuda.h), run by fake_gpu_test under `edo record`
// and without it. Known ground truth:
//  * fake.emb.a: 100 x 8 f32, fake.emb.b: 50 x 4 f16, both cudaMalloc'ed and registered;
//  * kRuntimeLaunches launches of gather_rows on fake.emb.a through cudaLaunchKernel (no
//    driver callback inside, as on the real stack), each followed by edo_table_lookup of its
//    kIdx device indices (idx[i] = i % 100, so rows 0..99 are read kRuntimeLaunches * 10 times);
//  * kChevronLaunches launches of gather_half on fake.emb.b through __cudaLaunchKernel (CUDA
//    13's <<<>>> entry point; the fake runs it without driver callbacks);
//  * kDriverLaunches launches of triton_gather on fake.emb.a through cuLaunchKernel with the
//    arguments packed in `extra` (how Triton launches);
//  * kCuKernelLaunches launches of gather_kern on fake.emb.a through cuLaunchKernel given its
//    CUkernel cast to a CUfunction (cuFuncGetParamInfo cannot describe it);
//  * one launch each of gather_ex (cudaLaunchKernelExC) and gather_coop
//    (cudaLaunchCooperativeKernel) on fake.emb.a: runtime launches without driver callbacks;
//  * kStructLaunches launches of index_select_info on fake.emb.b through __cudaLaunchKernel,
//    whose tensors are passed in TensorInfo structs (how PyTorch's index_select / embedding
//    kernels take them), the source pointing at a row inside the table, and kStructRuntime
//    more through cudaLaunchKernel (a struct parameter's layout cannot be had there: reported
//    as launches whose arguments could not be read);
//  * one launch of fill_scratch that reads no table.
// After every launch it checks cudaGetLastError(), as PyTorch does. Prints the results'
// checksum (identical with and without edo), the launch errors seen, and the runtime calls the
// fake saw from inside tool callbacks.
#include <cuda_runtime_api.h>
#include <edo/edo.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "fake_cuda.h"

extern "C" cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);

// Allocations counted on the job's thread while a tool callback runs there (fake_cuda_in_callback:
// the fake driver's and runtime's CUPTI callbacks, i.e. the tracer's launch path): malloc and
// friends are interposed here (the executable's definitions come first in symbol lookup) and
// forwarded to glibc's. Sanitizer builds interpose malloc themselves: no count there.
#if !defined(FAKE_JOB_NO_MALLOC_COUNT)
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}
namespace {
thread_local bool tl_count_mallocs = false;  // initial-exec TLS: no allocation to reach it
thread_local uint64_t tl_mallocs_in_callbacks = 0;
inline void note_malloc() {
  if (tl_count_mallocs && fake_cuda_in_callback()) ++tl_mallocs_in_callbacks;
}
}  // namespace
extern "C" {
void* malloc(size_t n) {
  note_malloc();
  return __libc_malloc(n);
}
void free(void* p) { __libc_free(p); }
void* calloc(size_t a, size_t b) {
  note_malloc();
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  note_malloc();
  return __libc_realloc(p, n);
}
void* memalign(size_t a, size_t n) {
  note_malloc();
  return __libc_memalign(a, n);
}
void* aligned_alloc(size_t a, size_t n) {
  note_malloc();
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, size_t a, size_t n) {
  note_malloc();
  void* p = __libc_memalign(a, n);
  if (!p) return 12;  // ENOMEM
  *out = p;
  return 0;
}
}
#endif

namespace {

constexpr int kIdx = 1000;
constexpr int kRuntimeLaunches = 20;
constexpr int kChevronLaunches = 3;
constexpr int kDriverLaunches = 2;
constexpr int kStructLaunches = 4;
constexpr int kStructRuntime = 2;
constexpr int kCuKernelLaunches = 2;

template <class T>
T arg(void** args, int i) {
  T v;
  std::memcpy(&v, args[i], sizeof v);
  return v;
}

// gather_rows(const float* w, const long* idx, int n, int dim, float* out)
void gather_rows(void** a, unsigned, unsigned) {
  auto* w = arg<const float*>(a, 0);
  auto* idx = arg<const long*>(a, 1);
  const int n = arg<int>(a, 2), dim = arg<int>(a, 3);
  auto* out = arg<float*>(a, 4);
  for (int i = 0; i < n; ++i) {
    float s = 0.f;
    for (int d = 0; d < dim; ++d) s += w[idx[i] * dim + d];
    out[i] = s;
  }
}

// gather_half(const unsigned short* w, const long* idx, int n, int dim, float* out)
void gather_half(void** a, unsigned, unsigned) {
  auto* w = arg<const unsigned short*>(a, 0);
  auto* idx = arg<const long*>(a, 1);
  const int n = arg<int>(a, 2), dim = arg<int>(a, 3);
  auto* out = arg<float*>(a, 4);
  for (int i = 0; i < n; ++i) out[i] += float(w[(idx[i] % 50) * dim]);
}

// PyTorch's cuda::detail::TensorInfo<T, IndexType>: the data pointer inside an 80-byte struct.
struct TensorInfo {
  void* data;
  long sizes[4];
  long strides[4];
  int dims;
};

// index_select_info(TensorInfo<float> dst, TensorInfo<unsigned short> src, TensorInfo<long> idx, int n)
void index_select_info(void** a, unsigned, unsigned) {
  const auto dst = arg<TensorInfo>(a, 0), src = arg<TensorInfo>(a, 1), idx = arg<TensorInfo>(a, 2);
  const int n = arg<int>(a, 3);
  auto* out = static_cast<float*>(dst.data);
  auto* w = static_cast<const unsigned short*>(src.data);
  auto* ix = static_cast<const long*>(idx.data);
  for (int i = 0; i < n; ++i) out[i] += 0.5f * float(w[(ix[i] % src.sizes[0]) * src.strides[0]]);
}

// fill_scratch(float* out, int n)
void fill_scratch(void** a, unsigned, unsigned) {
  auto* out = arg<float*>(a, 0);
  const int n = arg<int>(a, 1);
  for (int i = 0; i < n; ++i) out[i] = float(i) * 0.5f;
}

char gather_rows_entry, gather_half_entry, fill_scratch_entry, index_select_entry, gather_ex_entry, gather_coop_entry;

int launch_errors = 0;
void check(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    if (launch_errors++ == 0) std::fprintf(stderr, "fake_gpu_job: %s: %s\n", what, cudaGetErrorString(e));
  }
}

}  // namespace

// `fake_gpu_job zipf`: the same Zipf batches counted twice, as device indices into
// "zipf.device" and as host indices into "zipf.host" (the fake's device memory is host memory,
// so one buffer serves both): the two tables must come out with the same figures.
int zipf_job() {
  constexpr uint64_t kRows = 60000;
  constexpr int kBatches = 40, kN = 50000;
  std::vector<double> cdf(kRows);
  double s = 0;
  for (uint64_t r = 0; r < kRows; ++r) cdf[r] = (s += 1.0 / std::pow(double(r + 1), 1.05));
  uint64_t x = 88172645463325252ull;
  std::vector<long> h(kN);
  long* d = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&d), kN * sizeof(long)) != cudaSuccess) return 1;
  const int64_t dev = edo_table_register("zipf.device", nullptr, kRows, 16, EDO_F32, EDO_CUDA);
  const int64_t host = edo_table_register("zipf.host", nullptr, kRows, 16, EDO_F32, EDO_HOST);
  for (int b = 0; b < kBatches; ++b) {
    for (int i = 0; i < kN; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const double u = double(x >> 11) / double(1ull << 53) * s;
      const uint64_t rank = uint64_t(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
      h[i] = long((rank * 2654435761ull) % kRows);  // ranks spread over the rows
    }
    cudaMemcpy(d, h.data(), kN * sizeof(long), cudaMemcpyHostToDevice);
    if (edo_table_lookup(dev, d, kN, EDO_I64, EDO_CUDA, nullptr) < 0) return 3;
    if (edo_table_lookup(host, d, kN, EDO_I64, EDO_HOST, nullptr) < 0) return 3;
  }
  cudaFree(d);
  std::printf("zipf_batches %d\n", kBatches);
  return 0;
}

// `fake_gpu_job release`: 5 launches, then the job hands CUPTI over to another tool (what
// edo's PyTorch hook does when torch.profiler starts tracing CUDA), which subscribes, then 5
// more launches. Each batch's indices are counted either way.
void CUPTIAPI other_tool_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

int release_job() {
  const size_t five[] = {0, 8, 16, 20, 24}, five_sizes[] = {8, 8, 4, 4, 8};
  fake_cudart_register_kernel(&gather_rows_entry, "_Z11gather_rowsPKfPKliiPf", gather_rows, five, five_sizes, 5);
  float* a = nullptr;
  long* idx = nullptr;
  float* out = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&a), 100 * 8 * sizeof(float));
  cudaMalloc(reinterpret_cast<void**>(&idx), kIdx * sizeof(long));
  cudaMalloc(reinterpret_cast<void**>(&out), kIdx * sizeof(float));
  std::vector<long> hidx(kIdx);
  for (int i = 0; i < kIdx; ++i) hidx[i] = i % 100;
  cudaMemcpy(idx, hidx.data(), kIdx * sizeof(long), cudaMemcpyHostToDevice);
  const int64_t t = edo_table_register("fake.emb.a", a, 100, 8, EDO_F32, EDO_CUDA);
  int n = kIdx, dim = 8;
  for (int it = 0; it < 10; ++it) {
    if (it == 5) {
      edo_release_gpu_capture("torch.profiler");
      CUpti_SubscriberHandle sub;
      std::printf("other_subscribed %d\n", int(cuptiSubscribe(&sub, other_tool_callback, nullptr)));
    }
    void* args[] = {&a, &idx, &n, &dim, &out};
    cudaLaunchKernel(&gather_rows_entry, dim3(4), dim3(256), args, 0, nullptr);
    check("cudaLaunchKernel(gather_rows)");
    edo_table_lookup(t, idx, kIdx, EDO_I64, EDO_CUDA, nullptr);
  }
  std::printf("launch_errors %d\n", launch_errors);
  return 0;
}

// `fake_gpu_job overrun`: a lookup whose count runs past its buffer is refused (the counting
// kernel would read outside it), one that fits is counted.
int overrun_job() {
  long* idx = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&idx), 1000 * sizeof(long));
  std::vector<long> h(1000, 3);
  cudaMemcpy(idx, h.data(), 1000 * sizeof(long), cudaMemcpyHostToDevice);
  const int64_t t = edo_table_register("fake.emb.a", nullptr, 100, 8, EDO_F32, EDO_CUDA);
  std::printf("overrun_rc %d\n", edo_table_lookup(t, idx, 2000, EDO_I64, EDO_CUDA, nullptr));
  std::printf("fits_rc %d\n", edo_table_lookup(t, idx, 1000, EDO_I64, EDO_CUDA, nullptr));
  return 0;
}

// `fake_gpu_job bound` (run with EDO_MAX_MEMORY_MB=16): a device table whose statistics cannot
// fit the budget (8M rows: 32 MB of exact counters) and a small one, 5 batches of 1000 device
// indices each.
int bound_job() {
  long* idx = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&idx), 1000 * sizeof(long));
  std::vector<long> h(1000);
  for (int i = 0; i < 1000; ++i) h[i] = i % 100;
  cudaMemcpy(idx, h.data(), 1000 * sizeof(long), cudaMemcpyHostToDevice);
  const int64_t big = edo_table_register("bound.big", nullptr, 8000000, 8, EDO_F32, EDO_CUDA);
  const int64_t small = edo_table_register("bound.small", nullptr, 100, 8, EDO_F32, EDO_CUDA);
  int failed = 0;
  for (int b = 0; b < 5; ++b) {
    failed += edo_table_lookup(big, idx, 1000, EDO_I64, EDO_CUDA, nullptr) != EDO_OK;
    failed += edo_table_lookup(small, idx, 1000, EDO_I64, EDO_CUDA, nullptr) != EDO_OK;
  }
  cudaFree(idx);
  std::printf("failed_lookups %d\n", failed);
  return 0;
}

// `fake_gpu_job device_bound` (run with EDO_MAX_DEVICE_MB=40): two device tables, one whose
// exact counters (8M rows: 32 MB) do not fit the bound beside the sample arena, one small; 5
// batches of 1000 device indices each. Prints the job's own device bytes and the fake driver's
// peak of live device memory (the job's and edo's cuMemAlloc together).
int device_bound_job() {
  long* idx = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&idx), 1000 * sizeof(long)) != cudaSuccess) return 1;
  std::vector<long> h(1000);
  for (int i = 0; i < 1000; ++i) h[i] = i % 100;
  cudaMemcpy(idx, h.data(), 1000 * sizeof(long), cudaMemcpyHostToDevice);
  const int64_t big = edo_table_register("dbound.big", nullptr, 8000000, 8, EDO_F32, EDO_CUDA);
  const int64_t small = edo_table_register("dbound.small", nullptr, 100, 8, EDO_F32, EDO_CUDA);
  int failed = 0;
  for (int b = 0; b < 5; ++b) {
    failed += edo_table_lookup(big, idx, 1000, EDO_I64, EDO_CUDA, nullptr) != EDO_OK;
    failed += edo_table_lookup(small, idx, 1000, EDO_I64, EDO_CUDA, nullptr) != EDO_OK;
  }
  std::printf("failed_lookups %d\n", failed);
  std::printf("job_device_bytes %zu\n", 1000 * sizeof(long));
  std::printf("peak_device_bytes %llu\n", static_cast<unsigned long long>(fake_cuda_peak_bytes()));
  cudaFree(idx);
  return 0;
}

// `fake_gpu_job sparse`: a table of 1M rows counted on the device, 4 batches that read only rows
// 5, 500000 and 999999 (3 of its 1024 blocks of 1024 counters). Each flush should copy those
// blocks, not the table's 4 MB of counters (the test counts the bytes the fake copied).
int sparse_job() {
  long* idx = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&idx), 3 * sizeof(long)) != cudaSuccess) return 1;
  const long h[3] = {5, 500000, 999999};
  cudaMemcpy(idx, h, sizeof h, cudaMemcpyHostToDevice);
  const int64_t t = edo_table_register("sparse.big", nullptr, 1000000, 8, EDO_F32, EDO_CUDA);
  int failed = 0;
  for (int b = 0; b < 4; ++b) {
    failed += edo_table_lookup(t, idx, 3, EDO_I64, EDO_CUDA, nullptr) != EDO_OK;
    // Let a few flushes (EDO_FLUSH_MS=10) see the table between batches: the event queries of
    // edo's poll say its background thread ran since this batch.
    const uint64_t seen = fake_cuda_event_queries();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (fake_cuda_event_queries() <= seen && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::printf("failed_lookups %d\n", failed);
  cudaFree(idx);
  return 0;
}

// `fake_gpu_job contexts`: a stream created in the primary context, 5 batches counted on it,
// then 5 more while the thread has another context current (a job that switches contexts;
// edo must use the stream's). Waits (bounded) until edo's background thread has queried the
// first batches' events, then prints what the fake driver saw.
int contexts_job() {
  CUcontext primary = nullptr;
  cuCtxGetCurrent(&primary);
  cudaStream_t s = nullptr;
  if (cudaStreamCreate(&s) != cudaSuccess) return 1;
  long* idx = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&idx), 1000 * sizeof(long)) != cudaSuccess) return 1;
  std::vector<long> h(1000);
  for (int i = 0; i < 1000; ++i) h[i] = i % 100;
  cudaMemcpy(idx, h.data(), 1000 * sizeof(long), cudaMemcpyHostToDevice);
  const int64_t t = edo_table_register("ctx.a", nullptr, 100, 8, EDO_F32, EDO_CUDA);
  int failed = 0;
  for (int b = 0; b < 5; ++b) failed += edo_table_lookup(t, idx, 1000, EDO_I64, EDO_CUDA, s) != EDO_OK;
  cuCtxSetCurrent(fake_cuda_other_context());
  for (int b = 0; b < 5; ++b) failed += edo_table_lookup(t, idx, 1000, EDO_I64, EDO_CUDA, s) != EDO_OK;
  cuCtxSetCurrent(primary);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (fake_cuda_event_queries() < 5 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::printf("failed_lookups %d\n", failed);
  std::printf("wrong_context_launches %llu\n", static_cast<unsigned long long>(fake_cuda_wrong_context_launches()));
  std::printf("unbalanced_pops %llu\n", static_cast<unsigned long long>(fake_cuda_unbalanced_pops()));
  std::printf("primary_retains %d\n", fake_cuda_primary_retains());
  std::printf("event_queries_seen %d\n", fake_cuda_event_queries() >= 5 ? 1 : 0);
  std::printf("blocked_deliveries %llu\n", static_cast<unsigned long long>(fake_cuda_blocked_deliveries()));
  return 0;
}

// `fake_gpu_job graph`: what torch.cuda.graph does. One eager step on stream s (gather_rows on
// fake.emb.a + edo_table_lookup of its 1000 device indices), then the same step captured into a
// CUDA graph in GLOBAL mode (the default of torch.cuda.graph), then kGraphReplays launches of
// the graph. With FAKE_WAIT_FOREIGN_CALLS=1 the capture stays open until another thread (edo's
// flush, EDO_FLUSH_MS=10) has called the driver during it, at most 60 s. Prints the capture's
// result (0: a graph), the replays, and the driver calls other threads made during the capture.
constexpr int kGraphReplays = 5;

// `fake_gpu_job reload`: first(const float* a, int n) on fake.emb.a through cuLaunchKernel,
// then its module is unloaded and the same handle becomes second(int n, const unsigned short*
// b), launched on fake.emb.b (what Triton / Inductor autotuning / NVRTC reloads look like).
void first_body(void**, unsigned, unsigned) {}
int reload_job() {
  float* a = nullptr;
  unsigned short* b = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&a), 100 * 8 * sizeof(float));
  cudaMalloc(reinterpret_cast<void**>(&b), 50 * 4 * 2);
  edo_table_register("fake.emb.a", a, 100, 8, EDO_F32, EDO_CUDA);
  edo_table_register("fake.emb.b", b, 50, 4, EDO_F16, EDO_CUDA);
  const size_t first_off[] = {0, 8}, first_size[] = {8, 4};
  const size_t second_off[] = {0, 8}, second_size[] = {4, 8};
  CUmodule m = nullptr;
  static const char image[] = "fake module";
  cuModuleLoadData(&m, image);
  fake_kernel* k = fake_cuda_kernel("_Z5firstPKfi", first_body, first_off, first_size, 2);
  int n = 100;
  void* first_args[] = {&a, &n};
  int errors = cuLaunchKernel(reinterpret_cast<CUfunction>(k), 1, 1, 1, 32, 1, 1, 0, nullptr, first_args, nullptr) != CUDA_SUCCESS;
  cuModuleUnload(m);
  fake_cuda_reuse_kernel(k, "_Z6secondiPKt", first_body, second_off, second_size, 2);
  void* second_args[] = {&n, &b};
  errors += cuLaunchKernel(reinterpret_cast<CUfunction>(k), 1, 1, 1, 32, 1, 1, 0, nullptr, second_args, nullptr) != CUDA_SUCCESS;
  std::printf("launch_errors %d\n", errors);
  return 0;
}
int graph_job() {
  const size_t five[] = {0, 8, 16, 20, 24}, five_sizes[] = {8, 8, 4, 4, 8};
  fake_cudart_register_kernel(&gather_rows_entry, "_Z11gather_rowsPKfPKliiPf", gather_rows, five, five_sizes, 5);
  float* a = nullptr;
  long* idx = nullptr;
  float* out = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&a), 100 * 8 * sizeof(float));
  cudaMalloc(reinterpret_cast<void**>(&idx), kIdx * sizeof(long));
  cudaMalloc(reinterpret_cast<void**>(&out), kIdx * sizeof(float));
  std::vector<long> hidx(kIdx);
  for (int i = 0; i < kIdx; ++i) hidx[i] = i % 100;
  std::vector<float> wa(100 * 8);
  for (size_t i = 0; i < wa.size(); ++i) wa[i] = float(i % 97) * 0.25f;
  cudaMemcpy(a, wa.data(), wa.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(idx, hidx.data(), kIdx * sizeof(long), cudaMemcpyHostToDevice);
  const int64_t t = edo_table_register("fake.emb.a", a, 100, 8, EDO_F32, EDO_CUDA);
  cudaStream_t s;
  cudaStreamCreate(&s);
  int n = kIdx, dim = 8;
  void* args[] = {&a, &idx, &n, &dim, &out};
  auto step = [&] {
    cudaLaunchKernel(&gather_rows_entry, dim3(4), dim3(256), args, 0, s);
    check("cudaLaunchKernel(gather_rows)");
    edo_table_lookup(t, idx, kIdx, EDO_I64, EDO_CUDA, s);
  };
  step();  // warm-up outside the capture, as torch.cuda.graph's callers do
  cudaStreamSynchronize(s);
  const uint64_t foreign_before = fake_cuda_foreign_calls();
  if (cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess) return 4;
  step();
  if (const char* w = std::getenv("FAKE_WAIT_FOREIGN_CALLS"); w && *w == '1')
    for (int i = 0; i < 60000 && fake_cuda_foreign_calls() == foreign_before; ++i) usleep(1000);
  const uint64_t foreign = fake_cuda_foreign_calls() - foreign_before;
  cudaGraph_t graph = nullptr;
  const cudaError_t captured = cudaStreamEndCapture(s, &graph);
  std::printf("capture_rc %d\n", int(captured));
  std::printf("foreign_calls_during_capture %llu\n", static_cast<unsigned long long>(foreign));
  int replays = 0;
  cudaGraphExec_t exec = nullptr;
  if (captured == cudaSuccess && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess) {
    for (int i = 0; i < kGraphReplays; ++i) replays += cudaGraphLaunch(exec, s) == cudaSuccess;
    cudaStreamSynchronize(s);
    cudaGraphExecDestroy(exec);
  }
  if (graph) cudaGraphDestroy(graph);
  std::vector<float> hout(kIdx);
  cudaMemcpy(hout.data(), out, kIdx * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0;
  for (int i = 0; i < kIdx; ++i) checksum += double(hout[i]) * double(i % 7 + 1);
  std::printf("graph_replays %d\n", replays);
  std::printf("checksum %.17g\n", checksum);
  std::printf("launch_errors %d\n", launch_errors);
  return 0;
}

// `fake_gpu_job launches N`: the launch path's cost (bench/launch_cost): N launches of an empty
// kernel with a PyTorch-style templated name and three pointer arguments, through
// __cudaLaunchKernel (<<<>>>, what PyTorch's kernels use) and through cudaLaunchKernel, timed
// on the job's thread. Prints nanoseconds per launch for each path.
void empty_body(void**, unsigned, unsigned) {}
char empty_entry;
int launches_job(int n) {
  const size_t three[] = {0, 8, 16}, three_sizes[] = {8, 8, 8};
  // void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(float*, float const*, float*)
  const char* name = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEvPfPKfS4_";
  void* kern = fake_cudart_register_kernel(&empty_entry, name, empty_body, three, three_sizes, 3);
  float* a = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&a), 1024);
  edo_table_register("bench.emb", a, 16, 16, EDO_F32, EDO_CUDA);
  const float* b = a;
  const float* c = a + 8;
  void* args[] = {&a, &b, &c};
  // Wall-clock and the job thread's own CPU time (CLOCK_THREAD_CPUTIME_ID): on a loaded
  // machine the second leaves out the time the thread waited for a core.
  auto thread_ns = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
  };
  auto timed = [&](auto launch, double& cpu) {
    for (int i = 0; i < n / 10 + 1; ++i) launch();  // warm-up: caches, first-launch work
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_ns();
    for (int i = 0; i < n; ++i) launch();
    cpu = (thread_ns() - c0) / n;
    return double(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count()) / n;
  };
  double chevron_cpu = 0, runtime_cpu = 0;
  const double chevron = timed([&] { __cudaLaunchKernel(static_cast<cudaKernel_t>(kern), dim3(1), dim3(32), args, 0, nullptr); }, chevron_cpu);
  const double runtime = timed([&] { cudaLaunchKernel(&empty_entry, dim3(1), dim3(32), args, 0, nullptr); }, runtime_cpu);
  std::printf("ns_per_launch_chevron %.1f\n", chevron);
  std::printf("ns_per_launch_runtime %.1f\n", runtime);
  std::printf("cpu_ns_per_launch_chevron %.1f\n", chevron_cpu);
  std::printf("cpu_ns_per_launch_runtime %.1f\n", runtime_cpu);
  cudaFree(a);
  return 0;
}

// `fake_gpu_job launch_mallocs`: the allocations the tracer makes on the job's thread per launch
// (issue 21 §4: none once warm). Four kinds of launch that read a registered table, in turn:
// <<<>>> (__cudaLaunchKernel), cudaLaunchKernel (read by the name's parameter types),
// cuLaunchKernel (driver callback, cuFuncGetParamInfo) and a cudaLaunchKernel of a kernel
// taking a struct (arguments not read: counted per kernel). 100 rounds of warm-up, then 250
// rounds (1000 launches) counted. Prints the allocations made inside tool callbacks in each part.
int launch_mallocs_job() {
#if defined(FAKE_JOB_NO_MALLOC_COUNT)
  std::printf("launch_mallocs unavailable\n");
  return 0;
#else
  const size_t three[] = {0, 8, 16}, three_sizes[] = {8, 8, 8};
  const char* name = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEvPfPKfS4_";
  void* kern = fake_cudart_register_kernel(&empty_entry, name, empty_body, three, three_sizes, 3);
  fake_kernel* driver = fake_cuda_kernel("_Z11driver_fillPfPKfS1_", empty_body, three, three_sizes, 3);
  const size_t one[] = {0}, one_size[] = {80};
  static char struct_entry;
  fake_cudart_register_kernel(&struct_entry, "_Z11struct_fill10TensorInfo", empty_body, one, one_size, 1);
  float* a = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&a), 1024);
  edo_table_register("mallocs.emb", a, 16, 16, EDO_F32, EDO_CUDA);
  const float* b = a;
  const float* c = a + 8;
  void* args[] = {&a, &b, &c};
  TensorInfo info{a, {16, 16, 0, 0}, {16, 1, 0, 0}, 2};
  void* struct_args[] = {&info};
  int errors = 0;
  auto round = [&] {
    errors += __cudaLaunchKernel(static_cast<cudaKernel_t>(kern), dim3(1), dim3(32), args, 0, nullptr) != cudaSuccess;
    errors += cudaLaunchKernel(&empty_entry, dim3(1), dim3(32), args, 0, nullptr) != cudaSuccess;
    errors += cuLaunchKernel(reinterpret_cast<CUfunction>(driver), 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr) != CUDA_SUCCESS;
    errors += cudaLaunchKernel(&struct_entry, dim3(1), dim3(32), struct_args, 0, nullptr) != cudaSuccess;
  };
  tl_count_mallocs = true;
  for (int i = 0; i < 100; ++i) round();
  const uint64_t warmup = tl_mallocs_in_callbacks;
  tl_mallocs_in_callbacks = 0;
  for (int i = 0; i < 250; ++i) round();
  tl_count_mallocs = false;
  std::printf("launch_errors %d\n", errors);
  std::printf("mallocs_in_callbacks_warmup %llu\n", static_cast<unsigned long long>(warmup));
  std::printf("mallocs_in_callbacks_1000_launches %llu\n", static_cast<unsigned long long>(tl_mallocs_in_callbacks));
  cudaFree(a);
  return 0;
#endif
}

// `fake_gpu_job cupti_fork`: a thread is inside the tracer's launch callback of
// parent_fill(const float*, int) on fork.emb, held there by a parameter query that takes its
// time (fake_cuda_hold_param_info), while the main thread forks kForkChildren children. Each
// child allocates 64 bytes, launches child_fill(const float*, int) on fork.emb through
// cuLaunchKernel (its first launch of that kernel: its layout is asked of the driver), frees
// and exits. A child that inherited a lock of the tracer's CUPTI side held by the (absent)
// thread hangs: the children are waited for up to 60 s together, then killed and counted.
// Then the parent's launch is let go. Prints "cupti_fork_hung N" and "cupti_fork_children N".
int cupti_fork_job() {
  constexpr int kForkChildren = 3;
  const size_t two[] = {0, 8}, two_sizes[] = {8, 4};
  fake_kernel* parent_k = fake_cuda_kernel("_Z11parent_fillPKfi", empty_body, two, two_sizes, 2);
  fake_kernel* child_k = fake_cuda_kernel("_Z10child_fillPKfi", empty_body, two, two_sizes, 2);
  float* a = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&a), 100 * 8 * sizeof(float));
  edo_table_register("fork.emb", a, 100, 8, EDO_F32, EDO_CUDA);
  int n = 100;
  void* args[] = {&a, &n};
  fake_cuda_hold_param_info(parent_k);
  int errors = 0;
  std::thread launcher([&] {
    errors += cuLaunchKernel(reinterpret_cast<CUfunction>(parent_k), 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr) !=
              CUDA_SUCCESS;
  });
  // Inside the callback: the tracer asks the driver for parent_fill's parameters. Without a
  // tracer nothing asks, and the children fork at once.
  for (int i = 0; i < 600 && fake_cuda_tool_attached() && !fake_cuda_param_info_waiting(); ++i) usleep(100000);
  std::printf("launcher_inside_callback %d\n", fake_cuda_param_info_waiting());
  std::fflush(stdout);
  std::vector<pid_t> kids;
  for (int k = 0; k < kForkChildren; ++k) {
    const pid_t c = fork();
    if (c == 0) {
      float* x = nullptr;
      int bad = cudaMalloc(reinterpret_cast<void**>(&x), 64) != cudaSuccess;
      bad += cuLaunchKernel(reinterpret_cast<CUfunction>(child_k), 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr) !=
             CUDA_SUCCESS;
      bad += cudaFree(x) != cudaSuccess;
      std::exit(bad ? 3 : 0);
    }
    if (c > 0) kids.push_back(c);
  }
  int hung = 0, failed = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (pid_t c : kids) {
    int st = 0;
    while (waitpid(c, &st, WNOHANG) != c) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(c, SIGKILL);
        waitpid(c, &st, 0);
        ++hung;
        break;
      }
      usleep(1000);
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) != 0) ++failed;
  }
  fake_cuda_release_param_info();
  launcher.join();
  std::printf("cupti_fork_hung %d\n", hung);
  std::printf("cupti_fork_children %d\n", int(kids.size()) - hung - failed);
  std::printf("launch_errors %d\n", errors);
  cudaFree(a);
  return 0;
}

// `fake_gpu_job late_init`: the job's first CUDA call comes late (as when a job sets
// CUDA_VISIBLE_DEVICES after `import torch`). Under edo it first waits (at most 30 s) until edo
// has attached to CUDA (subscribed to the fake CUPTI), then prints the driver calls made before
// its own first CUDA call: edo must have made none.
int late_init_job() {
  for (int i = 0; i < 30000 && !fake_cuda_tool_attached(); ++i) usleep(1000);
  std::printf("tool_attached %d\n", fake_cuda_tool_attached());
  std::printf("driver_calls_before_the_job %llu\n", static_cast<unsigned long long>(fake_cuda_calls_before_init()));
  int n = 0;
  cudaGetDeviceCount(&n);
  std::printf("devices %d\n", n);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "late_init") == 0) return late_init_job();
  if (argc > 1 && std::strcmp(argv[1], "cupti_fork") == 0) return cupti_fork_job();
  if (argc > 2 && std::strcmp(argv[1], "launches") == 0) return launches_job(std::atoi(argv[2]));
  if (argc > 1 && std::strcmp(argv[1], "graph") == 0) return graph_job();
  if (argc > 1 && std::strcmp(argv[1], "reload") == 0) return reload_job();
  if (argc > 1 && std::strcmp(argv[1], "bound") == 0) return bound_job();
  if (argc > 1 && std::strcmp(argv[1], "device_bound") == 0) return device_bound_job();
  if (argc > 1 && std::strcmp(argv[1], "contexts") == 0) return contexts_job();
  if (argc > 1 && std::strcmp(argv[1], "sparse") == 0) return sparse_job();
  if (argc > 1 && std::strcmp(argv[1], "launch_mallocs") == 0) return launch_mallocs_job();
  if (argc > 1 && std::strcmp(argv[1], "zipf") == 0) return zipf_job();
  if (argc > 1 && std::strcmp(argv[1], "overrun") == 0) return overrun_job();
  if (argc > 1 && std::strcmp(argv[1], "release") == 0) return release_job();
  const size_t five[] = {0, 8, 16, 20, 24}, five_sizes[] = {8, 8, 4, 4, 8};
  const size_t two[] = {0, 8}, two_sizes[] = {8, 4};
  fake_cudart_register_kernel(&gather_rows_entry, "_Z11gather_rowsPKfPKliiPf", gather_rows, five, five_sizes, 5);
  void* half_kernel = fake_cudart_register_kernel(&gather_half_entry, "_Z11gather_halfPKtPKliiPf", gather_half, five,
                                                  five_sizes, 5);
  fake_cudart_register_kernel(&fill_scratch_entry, "_Z12fill_scratchPfi", fill_scratch, two, two_sizes, 2);
  fake_kernel* triton = fake_cuda_kernel("triton_gather", gather_rows, five, five_sizes, 5);
  fake_kernel* kern = fake_cuda_kernel("_Z11gather_kernPKfPKliiPf", gather_rows, five, five_sizes, 5);
  const size_t info[] = {0, 80, 160, 240}, info_sizes[] = {80, 80, 80, 4};
  void* select_kernel = fake_cudart_register_kernel(&index_select_entry, "_Z17index_select_info10TensorInfoS_S_i",
                                                    index_select_info, info, info_sizes, 4);
  fake_cudart_register_kernel(&gather_ex_entry, "_Z9gather_exPKfPKliiPf", gather_rows, five, five_sizes, 5);
  fake_cudart_register_kernel(&gather_coop_entry, "_Z11gather_coopPKfPKliiPf", gather_rows, five, five_sizes, 5);

  float* a = nullptr;
  unsigned short* b = nullptr;
  long* idx = nullptr;
  float* out = nullptr;
  float* scratch = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&a), 100 * 8 * sizeof(float)) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&b), 50 * 4 * 2) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&idx), kIdx * sizeof(long)) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&out), kIdx * sizeof(float)) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&scratch), 64 * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "fake_gpu_job: cudaMalloc failed\n");
    return 1;
  }
  std::vector<float> wa(100 * 8);
  for (size_t i = 0; i < wa.size(); ++i) wa[i] = float(i % 97) * 0.25f;
  std::vector<unsigned short> wb(50 * 4);
  for (size_t i = 0; i < wb.size(); ++i) wb[i] = static_cast<unsigned short>(i * 3);
  std::vector<long> hidx(kIdx);
  for (int i = 0; i < kIdx; ++i) hidx[i] = i % 100;
  cudaMemcpy(a, wa.data(), wa.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(b, wb.data(), wb.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(idx, hidx.data(), kIdx * sizeof(long), cudaMemcpyHostToDevice);
  if (edo_table_register("fake.emb.a", a, 100, 8, EDO_F32, EDO_CUDA) < 0) return 2;
  if (edo_table_register("fake.emb.b", b, 50, 4, EDO_F16, EDO_CUDA) < 0) return 2;
  cudaStream_t s;
  cudaStreamCreate(&s);

  int n = kIdx, dim = 8, dim_b = 4, scratch_n = 64;
  for (int it = 0; it < kRuntimeLaunches; ++it) {
    void* args[] = {&a, &idx, &n, &dim, &out};
    cudaLaunchKernel(&gather_rows_entry, dim3(4), dim3(256), args, 0, s);
    check("cudaLaunchKernel(gather_rows)");
    const int rc = edo_table_lookup(0, idx, kIdx, EDO_I64, EDO_CUDA, s);
    if (rc < 0 && it == 0) std::fprintf(stderr, "fake_gpu_job: edo_table_lookup: %s\n", edo_strerror(rc));
  }
  {
    void* args[] = {&a, &idx, &n, &dim, &out};
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(4);
    cfg.blockDim = dim3(256);
    cfg.stream = s;
    cudaLaunchKernelExC(&cfg, &gather_ex_entry, args);
    check("cudaLaunchKernelExC(gather_ex)");
    cudaLaunchCooperativeKernel(&gather_coop_entry, dim3(4), dim3(256), args, 0, s);
    check("cudaLaunchCooperativeKernel(gather_coop)");
  }
  for (int it = 0; it < kChevronLaunches; ++it) {
    void* args[] = {&b, &idx, &n, &dim_b, &out};
    __cudaLaunchKernel(static_cast<cudaKernel_t>(half_kernel), dim3(4), dim3(256), args, 0, s);
    check("__cudaLaunchKernel(gather_half)");
  }
  for (int it = 0; it < kDriverLaunches; ++it) {
    alignas(8) unsigned char packed[32] = {};
    std::memcpy(packed, &a, 8);
    std::memcpy(packed + 8, &idx, 8);
    std::memcpy(packed + 16, &n, 4);
    std::memcpy(packed + 20, &dim, 4);
    std::memcpy(packed + 24, &out, 8);
    size_t size = sizeof packed;
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    if (cuLaunchKernel(reinterpret_cast<CUfunction>(triton), 4, 1, 1, 256, 1, 1, 0, reinterpret_cast<CUstream>(s),
                       nullptr, extra) != CUDA_SUCCESS)
      ++launch_errors;
  }
  for (int it = 0; it < kCuKernelLaunches; ++it) {
    void* args[] = {&a, &idx, &n, &dim, &out};
    if (cuLaunchKernel(reinterpret_cast<CUfunction>(fake_cuda_cukernel(kern)), 4, 1, 1, 256, 1, 1, 0,
                       reinterpret_cast<CUstream>(s), args, nullptr) != CUDA_SUCCESS)
      ++launch_errors;
  }
  for (int it = 0; it < kStructLaunches + kStructRuntime; ++it) {
    // Rows 10.. of fake.emb.b: the pointer lies inside the table, not at its base.
    TensorInfo dst{out, {kIdx, 1, 1, 1}, {1, 1, 1, 1}, 1};
    TensorInfo src{b + 10 * 4, {40, 4, 1, 1}, {4, 1, 1, 1}, 2};
    TensorInfo ix{idx, {kIdx, 1, 1, 1}, {1, 1, 1, 1}, 1};
    void* args[] = {&dst, &src, &ix, &n};
    if (it < kStructLaunches) {
      __cudaLaunchKernel(static_cast<cudaKernel_t>(select_kernel), dim3(4), dim3(256), args, 0, s);
      check("__cudaLaunchKernel(index_select_info)");
    } else {
      cudaLaunchKernel(&index_select_entry, dim3(4), dim3(256), args, 0, s);
      check("cudaLaunchKernel(index_select_info)");
    }
  }
  {
    void* args[] = {&scratch, &scratch_n};
    cudaLaunchKernel(&fill_scratch_entry, dim3(1), dim3(64), args, 0, s);
    check("cudaLaunchKernel(fill_scratch)");
  }
  cudaStreamSynchronize(s);

  std::vector<float> hout(kIdx), hs(64);
  cudaMemcpy(hout.data(), out, kIdx * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(hs.data(), scratch, 64 * sizeof(float), cudaMemcpyDeviceToHost);
  double checksum = 0;
  for (int i = 0; i < kIdx; ++i) checksum += double(hout[i]) * double(i % 7 + 1);
  for (float v : hs) checksum += v;
  for (void* p : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(idx), static_cast<void*>(out),
                  static_cast<void*>(scratch)})
    cudaFree(p);
  check("cudaFree");
  std::printf("checksum %.17g\n", checksum);
  std::printf("launch_errors %d\n", launch_errors);
  std::printf("last_error %d\n", int(cudaPeekAtLastError()));
  std::printf("runtime_calls_in_callbacks %llu\n", static_cast<unsigned long long>(fake_cudart_calls_in_callbacks()));
  return 0;
}
