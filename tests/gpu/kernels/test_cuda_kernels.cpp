// Every CUDA kernel against the CPU backend (the oracle) on fresh random inputs, device
// outputs poisoned with NaN before each call. Skips with the reason when no device exists.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "edo/kernels/workload.h"
#include "edo/kernels/encode.h"
#include "edo/kernels/cuda.h"

using namespace edo::kernels;

namespace {

#define REQUIRE_DEVICE()                                              \
  do {                                                                \
    const std::string st = cuda::device_status();                     \
    if (!st.empty()) { GTEST_SKIP() << st; }                            \
  } while (0)

const char* kSpecs[] = {"fp32", "fp16", "bf16", "fp8", "fp8:scale=table", "int8", "int4", "pq", "pq:m=8", "multihash:buckets=997",
                        "multihash:buckets=500:k=4:mode=concat", "qr:m=8", "qr:m=5:op=add", "lowrank:rank=7", "pruned",
                        "pruned:default=mean", "offload:cache=0.2", "offload:cache=0.2:memory=managed", "offload:cache=0.1:policy=lru"};

struct Inputs {
  std::vector<std::int64_t> idx, offsets;
  std::vector<float> psw;
};

Inputs make_inputs(std::uint64_t rows, std::uint64_t seed) {
  Inputs in;
  Rng rng(seed);
  in.offsets.push_back(0);
  for (int b = 0; b < 300; ++b) {
    const std::uint64_t len = b % 11 == 0 ? 0 : (b == 17 ? 5000 : rng.below(64));
    for (std::uint64_t i = 0; i < len; ++i) in.idx.push_back(static_cast<std::int64_t>(rng.below(rows)));
    in.offsets.push_back(static_cast<std::int64_t>(in.idx.size()));
  }
  for (std::size_t i = 0; i < in.idx.size(); ++i) in.psw.push_back(static_cast<float>(rng.uniform() * 2 - 1));
  return in;
}

void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu, double tol, const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size());
  double scale = 0;
  for (float v : cpu) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    ASSERT_FALSE(std::isnan(gpu[i])) << what << ": element " << i << " not written (still NaN)";
    ASSERT_NEAR(gpu[i], cpu[i], tol * (1.0 + std::fabs(cpu[i]) + 1e-2 * scale)) << what << ": element " << i;
  }
}

}  // namespace

TEST(CudaKernels, DeviceStatusIsOneLine) {
  const std::string st = cuda::device_status();
  if (!st.empty()) {
    EXPECT_EQ(st.rfind("no CUDA device: ", 0), 0u) << st;
    EXPECT_EQ(st.find('\n'), std::string::npos);
    GTEST_SKIP() << st;
  }
  EXPECT_FALSE(cuda::device_description().empty());
}

TEST(CudaKernels, EveryStrategyMatchesTheCpuBackend) {
  REQUIRE_DEVICE();
  for (std::uint32_t D : {128u, 64u, 40u, 24u}) {
    for (const char* spec : kSpecs) {
      SCOPED_TRACE(std::string(spec) + " dim " + std::to_string(D));
      const std::uint64_t R = 5000 + D;
      std::vector<float> w(R * D);
      random_weights(w.data(), R, D, 100 + D);
      std::vector<std::uint64_t> counts(R, 1);
      for (std::uint64_t r = 0; r < R; r += 5) counts[r] = 0;
      EncodeOptions o;
      o.counts = counts.data();
      const StrategySpec s = StrategySpec::parse(spec);
      auto cpu = encode(s, w.data(), R, D, o);
      auto gpu = cuda::DeviceTable::upload(*cpu);
      const Inputs in = make_inputs(R, D * 7 + 1);
      const auto n = static_cast<std::int64_t>(in.idx.size());
      const auto nb = static_cast<std::int64_t>(in.offsets.size() - 1);
      std::vector<float> a(in.idx.size() * D), b(in.idx.size() * D);
      cpu->gather(in.idx.data(), n, a.data());
      cuda::gather_host(*gpu, in.idx.data(), n, b.data());
      expect_close(b, a, 1e-6, "gather");
      for (Pooling mode : {Pooling::Sum, Pooling::Mean}) {
        for (bool weighted : {false, true}) {
          std::vector<float> x(static_cast<std::size_t>(nb) * D), y(static_cast<std::size_t>(nb) * D);
          const float* psw = weighted ? in.psw.data() : nullptr;
          cpu->bag(in.idx.data(), n, in.offsets.data(), nb, psw, mode, x.data());
          cuda::bag_host(*gpu, in.idx.data(), n, in.offsets.data(), nb, psw, mode, y.data());
          expect_close(y, x, 2e-4, std::string("bag ") + (mode == Pooling::Mean ? "mean" : "sum") + (weighted ? " weighted" : ""));
        }
      }
      if (s.name == "offload") {
        EXPECT_NEAR(gpu->hit_rate(), cpu->hit_rate(), 1e-12);
      }
    }
  }
}

TEST(CudaKernels, BackwardMatchesTheCpuBackend) {
  REQUIRE_DEVICE();
  const std::uint64_t R = 2000;
  const std::uint32_t D = 64;
  std::vector<float> w(R * D);
  random_weights(w.data(), R, D, 5);
  const Inputs in = make_inputs(R, 77);
  const auto n = static_cast<std::int64_t>(in.idx.size());
  const auto nb = static_cast<std::int64_t>(in.offsets.size() - 1);
  std::vector<float> grad(static_cast<std::size_t>(nb) * D);
  random_weights(grad.data(), static_cast<std::uint64_t>(nb), D, 6, 0.01f);
  for (const char* spec : {"fp32", "fp16", "bf16"}) {
    SCOPED_TRACE(spec);
    auto cpu = encode(StrategySpec::parse(spec), w.data(), R, D);
    auto gpu = cuda::DeviceTable::upload(*cpu);
    cpu->backward(in.idx.data(), n, in.offsets.data(), nb, in.psw.data(), Pooling::Mean, grad.data(), 0.5f);
    cuda::DeviceBuffer di(n * 8), doff((nb + 1) * 8), dw(n * 4), dg(grad.size() * 4);
    di.upload(in.idx.data(), n * 8);
    doff.upload(in.offsets.data(), (nb + 1) * 8);
    dw.upload(in.psw.data(), n * 4);
    dg.upload(grad.data(), grad.size() * 4);
    gpu->backward(di.as<std::int64_t>(), n, doff.as<std::int64_t>(), nb, dw.as<float>(), Pooling::Mean, dg.as<float>(), 0.5f);
    gpu->synchronize();
    std::vector<float> a(R * D), b(R * D);
    cpu->decode_rows(0, R, a.data());
    gpu->download_rows(b.data());
    // fp16/bf16: the GPU rounds after every atomic add, the CPU once per row.
    const double tol = std::string(spec) == "fp32" ? 1e-5 : (std::string(spec) == "fp16" ? 3e-3 : 3e-2);
    expect_close(b, a, tol, "rows after backward");
  }
}

TEST(CudaKernels, OutOfRangeIndexIsReported) {
  REQUIRE_DEVICE();
  const std::uint64_t R = 100;
  const std::uint32_t D = 32;
  std::vector<float> w(R * D);
  random_weights(w.data(), R, D, 5);
  for (const char* spec : {"fp32", "int8", "int4", "pq", "offload"}) {
    auto gpu = cuda::DeviceTable::upload(*encode(StrategySpec::parse(spec), w.data(), R, D));
    std::vector<std::int64_t> idx(1000, 3);
    idx[777] = 100;
    std::vector<float> out(idx.size() * D);
    try {
      cuda::gather_host(*gpu, idx.data(), 1000, out.data());
      ADD_FAILURE() << spec << ": no exception";
    } catch (const IndexOutOfRange& e) {
      EXPECT_EQ(e.index, 100);
      EXPECT_EQ(e.position, 777);
    }
    idx[777] = 5;
    cuda::gather_host(*gpu, idx.data(), 1000, out.data());  // the table works again
  }
}

TEST(CudaKernels, Anchors) {
  REQUIRE_DEVICE();
  EXPECT_GT(cuda::d2d_copy_gbs(64ull << 20, 3), 1.0);
}
