// A job that is itself a CUPTI client (like a program under torch.profiler or another tracer):
// it subscribes to CUPTI (cuptiSubscribe_v2, named "edo-test-holder") before it touches CUDA.
// The CUDA runtime is linked statically, so CUDA appears in the process only at the first
// CUDA call, after the subscription: `edo record` must then report, in one line, that
// "edo-test-holder" holds CUPTI, and record the tables and device lookups all the same.
// Ground truth: holder.emb 10000 x 32 f32, 10 batches of 50000 device indices i % 5000.
// Exit 77 without a device.
#include <cuda_runtime.h>
#include <cupti.h>
#include <edo/edo.h>

#include <cstdio>
#include <vector>

namespace {
void CUPTIAPI on_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

__global__ void touch(const float* w, const long* idx, int n, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = w[idx[i] * 32];
}
}  // namespace

int main() {
  CUpti_SubscriberHandle sub;
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "edo-test-holder";
  const CUptiResult r = cuptiSubscribe_v2(&sub, on_callback, nullptr, &params);
  std::printf("holder_subscribed %d\n", int(r));
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  constexpr int kN = 50000;
  float* w = nullptr;
  long* idx = nullptr;
  float* out = nullptr;
  cudaMalloc(&w, size_t(10000) * 32 * sizeof(float));
  cudaMalloc(&idx, kN * sizeof(long));
  cudaMalloc(&out, kN * sizeof(float));
  std::vector<long> h(kN);
  for (int i = 0; i < kN; ++i) h[i] = i % 5000;
  cudaMemcpy(idx, h.data(), kN * sizeof(long), cudaMemcpyHostToDevice);
  const int64_t t = edo_table_register("holder.emb", w, 10000, 32, EDO_F32, EDO_CUDA);
  int errors = 0;
  for (int b = 0; b < 10; ++b) {
    touch<<<(kN + 255) / 256, 256>>>(w, idx, kN, out);
    errors += cudaGetLastError() != cudaSuccess;
    if (edo_table_lookup(t, idx, kN, EDO_I64, EDO_CUDA, nullptr) < 0) ++errors;
  }
  cudaDeviceSynchronize();
  std::printf("launch_errors %d\n", errors);
  return 0;
}
