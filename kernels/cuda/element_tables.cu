// CUDA kernels of PQ, multi-hash, QR, pruned (warp_bag.cuh with element_rows.h's formats) and
// low rank (its own kernel): pools the rank-r rows of A (r x 4 bytes per row) and multiplies by
// B once per bag, as the CPU backend does: r*D FMAs per bag instead of per row.
#include <cuda_runtime.h>

#include <algorithm>

#include "cuda/element_rows.h"
#include "cuda/table_impl.cuh"
#include "cuda/warp_bag.cuh"
#include "edo/kernels/formats/lowrank.h"

namespace edo::kernels::cuda::detail {
namespace {

// ---- low rank ------------------------------------------------------------------------------------
// A warp per bag: lanes pool the bag's rows of A (lane l holds ranks l, l+32, ...: KR of them),
// scale by 1/len for mean, then each lane multiplies by B for its columns, rank by rank in
// order (fma): the CPU backend's evaluation, step for step.
template <int KR, bool VEC>
__global__ void __launch_bounds__(kWarpBagThreads) lowrank_bag(LowRankView v, BagArgs a) {
  const int lane = threadIdx.x & 31;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (kWarpBagThreads / 32);
  for (std::int64_t bag = static_cast<std::int64_t>(blockIdx.x) * (kWarpBagThreads / 32) + (threadIdx.x >> 5); bag < a.n_bags;
       bag += warps) {
    std::int64_t s, e;
    bag_bounds(a, bag, s, e);
    float pa[KR];
#pragma unroll
    for (int i = 0; i < KR; ++i) pa[i] = 0.f;
    for (std::int64_t p0 = s; p0 < e; p0 += 32) {
      const std::int64_t p = p0 + lane;
      std::int64_t r = 0;
      float w = 0.f;
      int ok = 0;
      if (p < e) {
        r = a.idx[p];
        if (in_range(r, a.rows, p, a.err)) {
          ok = 1;
          w = a.psw ? a.psw[p] : 1.f;
        }
      }
      const unsigned int valid = __ballot_sync(0xffffffffu, ok);
      const int n = static_cast<int>(e - p0 < 32 ? e - p0 : 32);
      for (int j = 0; j < n; ++j) {
        const std::int64_t rj = __shfl_sync(0xffffffffu, r, j);
        const float wj = __shfl_sync(0xffffffffu, w, j);
        if (!((valid >> j) & 1u)) continue;
        const float* ar = v.a + static_cast<std::uint64_t>(rj) * v.rank;
#pragma unroll
        for (int i = 0; i < KR; ++i) {
          const std::uint32_t k = static_cast<std::uint32_t>(lane) + 32u * i;
          if (k < v.rank) pa[i] = fmaf(wj, __ldg(ar + k), pa[i]);
        }
      }
    }
    const float scale = bag_scale(a, s, e);
#pragma unroll
    for (int i = 0; i < KR; ++i) pa[i] *= scale;
    constexpr std::uint32_t kCols = VEC ? 128 : 32;
    for (std::uint32_t c0 = 0; c0 < v.dim; c0 += kCols) {
      const std::uint32_t col = c0 + static_cast<std::uint32_t>(lane) * (VEC ? 4u : 1u);
      Float4 o{0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int i = 0; i < KR; ++i) {
        for (std::uint32_t kk = 0; kk < 32; ++kk) {
          const std::uint32_t k = 32u * i + kk;
          if (k >= v.rank) break;
          const float ak = __shfl_sync(0xffffffffu, pa[i], static_cast<int>(kk));
          if (col < v.dim) {
            if constexpr (VEC) {
              fma4(ak, ldg4(v.b + static_cast<std::uint64_t>(k) * v.dim + col), o);
            } else {
              o.x = fmaf(ak, __ldg(v.b + static_cast<std::uint64_t>(k) * v.dim + col), o.x);
            }
          }
        }
      }
      if (col < v.dim) {
        float* out = a.out + static_cast<std::uint64_t>(bag) * v.dim + col;
        if constexpr (VEC) store4(out, o.x, o.y, o.z, o.w);
        else *out = o.x;
      }
    }
  }
}

// Low rank above 128: one column per thread, lowrank_value() per element (decode, then add).
__global__ void lowrank_bag_wide(LowRankView v, BagArgs a) {
  const int lane = threadIdx.x & 31;
  const std::int64_t bag = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (bag >= a.n_bags) return;
  std::int64_t s, e;
  bag_bounds(a, bag, s, e);
  for (std::uint32_t d = lane; d < v.dim; d += 32) {
    float acc = 0.f;
    for (std::int64_t p = s; p < e; ++p) {
      const std::int64_t r = a.idx[p];
      if (!in_range(r, a.rows, p, a.err)) continue;
      acc = fmaf(a.psw ? a.psw[p] : 1.f, lowrank_value(v, r, d), acc);
    }
    a.out[static_cast<std::uint64_t>(bag) * v.dim + d] = acc * bag_scale(a, s, e);
  }
}

// ---- the table -----------------------------------------------------------------------------------
class GenericTableImpl final : public TableImpl {
 public:
  explicit GenericTableImpl(const EncodedTable& t) : TableImpl(t), f_(t.format_data()) {
    for (const auto& arr : f_.arrays) bufs_.push_back(upload_array(f_, arr.name.c_str()));
    int dev = 0;
    EDO_CUDA(cudaGetDevice(&dev));
    EDO_CUDA(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, dev));
    EDO_CUDA(cudaDeviceGetAttribute(&max_smem_, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  }

 private:
  template <class T>
  const T* dev(const char* name) const {
    for (std::size_t i = 0; i < f_.arrays.size(); ++i)
      if (f_.arrays[i].name == name) return bufs_[i].as<T>();
    throw std::logic_error(std::string("no device array ") + name);
  }
  std::uint32_t u32(const char* s) const { return static_cast<std::uint32_t>(f_.scalar(s)); }

  template <class F, bool VEC>
  void run(F f, const BagArgs& a, std::size_t smem = 0, int max_blocks = 1 << 30) {
    warp_bag<F, VEC><<<warp_bag_grid(a.n_bags, max_blocks), kWarpBagThreads, smem, stream_>>>(f, a);
    EDO_CUDA(cudaGetLastError());
  }
  template <class F>
  void run_vec_or_scalar(F f, const BagArgs& a, bool vec) {
    if (vec) run<F, true>(f, a);
    else run<F, false>(f, a);
  }

  void launch_pq(const BagArgs& a) {
    const PqView v = pq_view(f_, [&](const char* name) -> const void* { return dev<void>(name); });
    const bool vec = pq_vec(v);
    const std::size_t cb = static_cast<std::size_t>(v.m) * v.k * v.dsub * 4;
    const bool codes16 = v.m <= 16;
    // The codebook in shared memory when it fits one block; every SM then keeps one block
    // resident and the grid is persistent (each block loads the codebook once).
    if (vec && static_cast<std::int64_t>(cb) <= max_smem_) {
      // Shared-memory set-up once per table, not per launch (a lookup makes no API calls
      // besides its launches: it can be captured into a CUDA graph).
      auto go = [&](auto f) {
        using F = decltype(f);
        if (pq_blocks_ == 0) {
          // The attribute belongs to the kernel, not the table: allow the device's maximum, so
          // that a table with a smaller codebook set up later cannot lower it below this one's.
          EDO_CUDA(cudaFuncSetAttribute(warp_bag<F, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem_));
          int per_sm = 0;
          EDO_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, warp_bag<F, true>, kWarpBagThreads, cb));
          pq_blocks_ = std::max(1, per_sm) * sms_;
        }
        run<F, true>(f, a, cb, pq_blocks_);
      };
      if (codes16) go(PqF<true, true>{v});
      else go(PqF<true, false>{v});
      return;
    }
    if (codes16) run_vec_or_scalar(PqF<false, true>{v}, a, vec);
    else run_vec_or_scalar(PqF<false, false>{v}, a, vec);
  }

  void launch(const BagArgs& a, std::int64_t) override {
    auto ptr = [&](const char* name) -> const void* { return dev<void>(name); };
    switch (f_.kind) {
      case FormatKind::PQ: return launch_pq(a);
      case FormatKind::MultiHash: {
        const MultiHashView v = multihash_view(f_, ptr);
        return run_vec_or_scalar(MhF{v}, a, multihash_vec(v));
      }
      case FormatKind::QR: {
        const QrView v = qr_view(f_, ptr);
        return run_vec_or_scalar(QrF{v}, a, qr_vec(v));
      }
      case FormatKind::Pruned: {
        const PrunedView v = pruned_view(f_, ptr);
        return run_vec_or_scalar(PrunedF{v}, a, pruned_vec(v));
      }
      case FormatKind::LowRank: return launch_lowrank(a);
      default: throw std::logic_error("unsupported format for the generic CUDA table");
    }
  }

  void launch_lowrank(const BagArgs& a) {
    const LowRankView v{dev<float>("a"), dev<float>("b"), u32("rank"), dim_};
    const int grid = warp_bag_grid(a.n_bags, 1 << 30);
    const bool vec = dim_ % 4 == 0;
    auto go = [&](auto kr) {
      constexpr int KR = decltype(kr)::value;
      if (vec) lowrank_bag<KR, true><<<grid, kWarpBagThreads, 0, stream_>>>(v, a);
      else lowrank_bag<KR, false><<<grid, kWarpBagThreads, 0, stream_>>>(v, a);
    };
    if (v.rank <= 32) go(std::integral_constant<int, 1>{});
    else if (v.rank <= 64) go(std::integral_constant<int, 2>{});
    else if (v.rank <= 128) go(std::integral_constant<int, 4>{});
    else lowrank_bag_wide<<<blocks_for(a.n_bags * 32, 256), 256, 0, stream_>>>(v, a);
    EDO_CUDA(cudaGetLastError());
  }

  FormatData f_;
  std::vector<DeviceBuffer> bufs_;
  int sms_ = 1, max_smem_ = 48 << 10, pq_blocks_ = 0;
};

}  // namespace

std::unique_ptr<DeviceTable> make_generic_table(const EncodedTable& t) { return std::make_unique<GenericTableImpl>(t); }

}  // namespace edo::kernels::cuda::detail
