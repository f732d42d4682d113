// Device-index counting overhead (issue 9.3), in one process: a lookup-bound GPU loop (one
// gather-and-sum kernel per batch of device indices into a large fp32 table) timed in ABBA
// blocks without (A) and with (B) edo_table_lookup(EDO_CUDA) after each gather, on the same
// stream. Prints edo's figure beside its anchor as a ratio (target: B/A <= 1.03), and the
// first call's set-up (module load, counters) apart.
//
//   edo record -o x.edodb -- bench_device_counting [--rows N] [--dim D] [--batch B]
//                                                  [--seconds S] [--rounds R] [--json FILE]
// (edo_table_lookup is live only under `edo record` or with EDO_OUTPUT set.)
// Exit 77 without a device.
#include <cuda_runtime.h>
#include <edo/edo.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "bench_device_counting: %s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

__device__ unsigned long long splitmix(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Log-uniform ranks (a Zipf-like skew, alpha ~ 1), spread over the rows by a multiplicative
// permutation: a few rows are hot, most are cold.
__global__ void make_indices(long long* idx, long long n, long long rows, unsigned long long seed) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double u = (splitmix(seed * 0x100000001b3ULL + i) >> 11) * (1.0 / 9007199254740992.0);
  const long long rank = (long long)floor(exp(u * log((double)rows))) - 1;
  idx[i] = (long long)(((unsigned long long)rank * 2654435761ULL) % (unsigned long long)rows);
}

// One warp per index: sums the row (dim floats, coalesced) into out[i].
__global__ void gather_sum(const float* __restrict__ w, const long long* __restrict__ idx, long long n, int dim,
                           float* __restrict__ out) {
  const long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (warp >= n) return;
  const float* row = w + idx[warp] * (long long)dim;
  float s = 0.f;
  for (int d = lane; d < dim; d += 32) s += row[d];
  for (int o = 16; o; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if (lane == 0) out[warp] = s;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  long long rows = 10000000, batch = 1000000;
  int dim = 128, rounds = 2;
  double seconds = 1.0;
  std::string json;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--rows") rows = std::atoll(argv[i + 1]);
    else if (k == "--dim") dim = std::atoi(argv[i + 1]);
    else if (k == "--batch") batch = std::atoll(argv[i + 1]);
    else if (k == "--seconds") seconds = std::atof(argv[i + 1]);
    else if (k == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (k == "--json") json = argv[i + 1];
    else {
      std::fprintf(stderr, "bench_device_counting: unknown option %s (see the source's header)\n", k.c_str());
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  if (!std::getenv("EDO_CHANNEL") && !std::getenv("EDO_OUTPUT"))
    std::fprintf(stderr, "bench_device_counting: not under `edo record` (nor EDO_OUTPUT): edo_table_lookup is a no-op, "
                         "the ratio measures nothing\n");
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  constexpr int kSets = 8;  // index batches, rotated
  float* w = nullptr;
  float* out = nullptr;
  long long* idx = nullptr;
  CK(cudaMalloc(&w, size_t(rows) * dim * sizeof(float)));
  CK(cudaMemset(w, 0, size_t(rows) * dim * sizeof(float)));
  CK(cudaMalloc(&idx, size_t(kSets) * batch * sizeof(long long)));
  CK(cudaMalloc(&out, size_t(batch) * sizeof(float)));
  for (int s = 0; s < kSets; ++s)
    make_indices<<<unsigned((batch + 255) / 256), 256>>>(idx + size_t(s) * batch, batch, rows, 17 + s);
  CK(cudaDeviceSynchronize());
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const int64_t table = edo_table_register("bench.emb", w, uint64_t(rows), uint32_t(dim), EDO_F32, EDO_CUDA);
  const unsigned grid = unsigned((batch * 32 + 255) / 256);

  // First call: loads the counting module, allocates and zeroes the table's counters.
  const double t0 = now_ms();
  const int rc = edo_table_lookup(table, idx, uint64_t(batch), EDO_I64, EDO_CUDA, st);
  CK(cudaStreamSynchronize(st));
  const double setup_ms = now_ms() - t0;
  if (rc != EDO_OK) std::fprintf(stderr, "bench_device_counting: edo_table_lookup: %s\n", edo_strerror(rc));

  auto block = [&](bool with_edo, long long batches) {
    CK(cudaStreamSynchronize(st));
    const double a = now_ms();
    for (long long b = 0; b < batches; ++b) {
      const long long* ib = idx + size_t(b % kSets) * batch;
      gather_sum<<<grid, 256, 0, st>>>(w, ib, batch, dim, out);
      if (with_edo) edo_table_lookup(table, ib, uint64_t(batch), EDO_I64, EDO_CUDA, st);
    }
    CK(cudaStreamSynchronize(st));
    return now_ms() - a;
  };
  // Warm up both, then size a block to at least `seconds`.
  block(false, 20);
  block(true, 20);
  const double probe = block(false, 50);
  const long long batches = std::max<long long>(50, (long long)std::ceil(seconds * 1000.0 / (probe / 50)));
  std::vector<double> a_ms, b_ms;
  for (int r = 0; r < rounds; ++r) {  // ABBA
    a_ms.push_back(block(false, batches));
    b_ms.push_back(block(true, batches));
    b_ms.push_back(block(true, batches));
    a_ms.push_back(block(false, batches));
  }
  double a = 0, b = 0;
  for (double x : a_ms) a += x;
  for (double x : b_ms) b += x;
  const double ratio = b / a;
  const double gbs = double(batch) * dim * 4 * batches * a_ms.size() / (a / 1e3) / 1e9;
  std::printf("device: %s\n", prop.name);
  std::printf("table %lld x %d fp32, %lld indices per batch, %lld batches per block, %zu blocks each\n", rows, dim,
              batch, batches, a_ms.size());
  std::printf("setup_first_lookup_ms %.3f\n", setup_ms);
  std::printf("anchor (gather only): %.3f ms per batch (%.0f GB/s of rows)\n", a / (batches * a_ms.size()), gbs);
  std::printf("edo (gather + edo_table_lookup): %.3f ms per batch\n", b / (batches * b_ms.size()));
  std::printf("overhead_ratio %.4f (target <= 1.03)\n", ratio);
  for (size_t i = 0; i < a_ms.size(); ++i) std::printf("  block A %.1f ms  B %.1f ms\n", a_ms[i], b_ms[i]);
  if (!json.empty()) {
    if (FILE* f = std::fopen(json.c_str(), "w")) {
      std::fprintf(f,
                   "{\"bench\": \"device_counting\", \"device\": \"%s\", \"rows\": %lld, \"dim\": %d, \"batch\": %lld, "
                   "\"batches_per_block\": %lld, \"setup_first_lookup_ms\": %.3f, \"anchor_ms_per_batch\": %.4f, "
                   "\"edo_ms_per_batch\": %.4f, \"overhead_ratio\": %.4f, \"target\": 1.03}\n",
                   prop.name, rows, dim, batch, batches, setup_ms, a / (batches * a_ms.size()),
                   b / (batches * b_ms.size()), ratio);
      std::fclose(f);
    }
  }
  return 0;
}
