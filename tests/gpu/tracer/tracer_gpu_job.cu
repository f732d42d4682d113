// A CUDA job for the tracer's GPU checks (run under `edo record` by tracer_gpu_tests and
// gpu-steps.sh). Known ground truth:
//  * gpu.emb.a: 100000 x 64 f32 (cudaMalloc), gpu.emb.b: 50000 x 32 f16 (cudaMallocAsync);
//  * kBatches launches of gather_rows on gpu.emb.a with 100000 device indices each, idx[i] = i % 1000,
//    counted through edo_table_lookup(EDO_CUDA) on the same stream: every row < 1000 is read
//    kBatches * 100 times; one launch of gather_half on gpu.emb.b;
//  * 3 launches of gather_info, whose table pointer (rows 100.. of gpu.emb.b) is passed inside
//    a struct, as PyTorch passes tensors (TensorInfo);
//  * scratch buffers allocated and freed (cudaMalloc/cudaFree, cudaMallocAsync/cudaFreeAsync).
// After every launch and lookup it checks cudaGetLastError(), as PyTorch does (issue 9: a
// tracer that calls the runtime from a CUPTI callback leaves "invalid device function" there).
// Prints "loop_ms <ms>" (the lookup loop, for the overhead figure) and "launch_errors <n>".
// Exit 77 without a device.
#include <cuda_runtime.h>
#include <edo/edo.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int kBatches = 20;
constexpr int kIdx = 100000;

__global__ void gather_rows(const float* w, const long* idx, int n, int dim, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float s = 0.f;
    for (int d = 0; d < dim; ++d) s += w[idx[i] * dim + d];
    out[i] = s;
  }
}

__global__ void gather_half(const unsigned short* w, const long* idx, int n, int dim, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = float(w[idx[i] * dim]);
}

// Like PyTorch's cuda::detail::TensorInfo: the data pointer inside a struct argument.
struct RowsInfo {
  const unsigned short* data;
  long sizes[2];
  long strides[2];
  int dims;
};

__global__ void gather_info(RowsInfo src, const long* idx, int n, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += float(src.data[(idx[i] % src.sizes[0]) * src.strides[0]]);
}

#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e = (x);                                                                   \
    if (e != cudaSuccess) {                                                                \
      std::fprintf(stderr, "tracer_gpu_job: %s: %s\n", #x, cudaGetErrorString(e));         \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

int launch_errors = 0;
void check(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess && launch_errors++ == 0)
    std::fprintf(stderr, "tracer_gpu_job: cudaGetLastError after %s: %s\n", what, cudaGetErrorString(e));
}

int main() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    std::printf("SKIP: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77;
  }
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  float* a = nullptr;
  unsigned short* b = nullptr;
  CK(cudaMalloc(&a, size_t(100000) * 64 * sizeof(float)));
  CK(cudaMallocAsync(reinterpret_cast<void**>(&b), size_t(50000) * 32 * 2, s));
  CK(cudaMemsetAsync(a, 0, size_t(100000) * 64 * sizeof(float), s));
  CK(cudaMemsetAsync(b, 0, size_t(50000) * 32 * 2, s));
  if (edo_table_register("gpu.emb.a", a, 100000, 64, EDO_F32, EDO_CUDA) < 0) return 2;
  if (edo_table_register("gpu.emb.b", b, 50000, 32, EDO_F16, EDO_CUDA) < 0) return 2;
  std::vector<long> h(kIdx);
  for (int i = 0; i < kIdx; ++i) h[i] = i % 1000;
  long* d_idx = nullptr;
  float* out = nullptr;
  CK(cudaMalloc(&d_idx, kIdx * sizeof(long)));
  CK(cudaMalloc(&out, kIdx * sizeof(float)));
  CK(cudaMemcpy(d_idx, h.data(), kIdx * sizeof(long), cudaMemcpyHostToDevice));
  CK(cudaStreamSynchronize(s));
  const auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < kBatches; ++it) {
    if (it % 2 == 0) {
      gather_rows<<<(kIdx + 255) / 256, 256, 0, s>>>(a, d_idx, kIdx, 64, out);  // __cudaLaunchKernel (CUDA 13)
    } else {
      int n = kIdx, dim = 64;
      void* args[] = {&a, &d_idx, &n, &dim, &out};
      cudaLaunchKernel(reinterpret_cast<const void*>(&gather_rows), dim3((kIdx + 255) / 256), dim3(256), args, 0, s);
    }
    check("gather_rows");
    int rc = edo_table_lookup(0, d_idx, kIdx, EDO_I64, EDO_CUDA, s);
    if (rc < 0 && it == 0) std::fprintf(stderr, "tracer_gpu_job: edo_table_lookup: %s\n", edo_strerror(rc));
    check("edo_table_lookup");
  }
  CK(cudaStreamSynchronize(s));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  gather_half<<<(1000 + 255) / 256, 256, 0, s>>>(b, d_idx, 1000, 32, out);
  check("gather_half");
  for (int it = 0; it < 3; ++it) {
    RowsInfo info{b + size_t(100) * 32, {49900, 32}, {32, 1}, 2};
    gather_info<<<(1000 + 255) / 256, 256, 0, s>>>(info, d_idx, 1000, out);
    check("gather_info");
  }
  void* scratch = nullptr;
  CK(cudaMallocAsync(&scratch, 1 << 20, s));
  CK(cudaFreeAsync(scratch, s));
  CK(cudaFree(out));
  CK(cudaStreamSynchronize(s));
  check("cudaFree");
  std::printf("loop_ms %.3f\n", ms);
  std::printf("launch_errors %d\n", launch_errors);
  return 0;
}
