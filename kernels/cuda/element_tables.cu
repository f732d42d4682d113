// CUDA kernels of PQ, multi-hash, QR, pruned (warp_bag.cuh) and low rank (its own kernel).
//
// Where the time goes and what each kernel does about it (issue 10, item 4; bounds in
// `edo bench --backend cuda`):
//   PQ          m code bytes per row from DRAM, then m sub-vectors from the codebook. The
//               codebook (k x D x 4 B, 128 KiB at D = 128) is copied into shared memory once
//               per block (persistent grid) when it fits; each row's codes (m <= 16) are loaded
//               by one lane with one 16-byte load and broadcast, so the inner loop reads only
//               shared memory.
//   multi-hash  the k buckets of a row are hashed once (by the lane that loaded the index; a
//               64-bit modulo each) into shared memory, not once per element as before.
//   QR          quotient and remainder once per row, two float4 rows per lane.
//   pruned      the 4-byte remap entries of 32 rows are read in parallel, then the rows.
//   low rank    pools the rank-r rows of A (r x 4 bytes per row) and multiplies by B once per
//               bag, as the CPU backend does: r*D FMAs per bag instead of per row.
#include <cuda_runtime.h>

#include <algorithm>

#include "cuda/table_impl.cuh"
#include "cuda/warp_bag.cuh"
#include "edo/kernels/formats/lowrank.h"
#include "edo/kernels/formats/multihash.h"
#include "edo/kernels/formats/pq.h"
#include "edo/kernels/formats/pruned.h"
#include "edo/kernels/formats/qr.h"

namespace edo::kernels::cuda::detail {
namespace {

__device__ __forceinline__ float4 ldg4(const float* p) { return __ldg(reinterpret_cast<const float4*>(p)); }

// ---- PQ ------------------------------------------------------------------------------------------
// SMEM: codebook in dynamic shared memory. CODES16: m <= 16, the row's codes travel in Meta.
template <bool SMEM, bool CODES16>
struct PqF {
  PqView v;
  struct Meta {
    unsigned int w[CODES16 ? 4 : 2];  // the codes (little endian), or the row id
  };
  __device__ void block_init() {
    if constexpr (SMEM) {
      extern __shared__ float4 pq_smem[];
      const std::uint64_t n4 = static_cast<std::uint64_t>(v.m) * v.k * v.dsub / 4;
      const float4* src = reinterpret_cast<const float4*>(v.codebook);
      for (std::uint64_t i = threadIdx.x; i < n4; i += blockDim.x) pq_smem[i] = __ldg(src + i);
      __syncthreads();
      v.codebook = reinterpret_cast<const float*>(pq_smem);
    }
  }
  __device__ Meta meta(std::int64_t row, int, bool) const {
    Meta m{};
    if constexpr (CODES16) {
      const std::uint8_t* c = v.codes + static_cast<std::uint64_t>(row) * v.m;
      if (v.m == 16) {
        const uint4 q = __ldg(reinterpret_cast<const uint4*>(c));
        m.w[0] = q.x, m.w[1] = q.y, m.w[2] = q.z, m.w[3] = q.w;
      } else {  // byte by byte; constant indices only, so the words stay in registers
        unsigned int w0 = 0, w1 = 0, w2 = 0, w3 = 0;
        for (std::uint32_t s = 0; s < v.m; ++s) {
          const unsigned int b = static_cast<unsigned int>(__ldg(c + s)) << ((s & 3) * 8);
          const std::uint32_t wi = s >> 2;
          w0 |= wi == 0 ? b : 0u;
          w1 |= wi == 1 ? b : 0u;
          w2 |= wi == 2 ? b : 0u;
          w3 |= wi == 3 ? b : 0u;
        }
        m.w[0] = w0, m.w[1] = w1, m.w[2] = w2, m.w[3] = w3;
      }
    } else {
      m.w[0] = static_cast<unsigned int>(row);
      m.w[1] = static_cast<unsigned int>(static_cast<std::uint64_t>(row) >> 32);
    }
    return m;
  }
  __device__ std::uint32_t code(const Meta& m, std::uint32_t s) const {
    if constexpr (CODES16) {
      const unsigned int q = (s >> 2) == 0 ? m.w[0] : (s >> 2) == 1 ? m.w[1] : (s >> 2) == 2 ? m.w[2] : m.w[3];
      return (q >> ((s & 3) * 8)) & 0xffu;
    } else {
      const std::uint64_t row = m.w[0] | static_cast<std::uint64_t>(m.w[1]) << 32;
      return __ldg(v.codes + row * v.m + s);
    }
  }
  // The column's sub-space and where its centroids start: codebook[s][c][col - s*dsub] is
  // base + c * dsub.
  struct Col {
    std::uint32_t s;
    const float* base;
  };
  __device__ Col column(std::uint32_t col) const {
    const std::uint32_t s = col / v.dsub;
    return {s, v.codebook + static_cast<std::uint64_t>(s) * v.k * v.dsub + (col - s * v.dsub)};
  }
  __device__ float4 load4(const Meta& m, const Col& c) const {
    const float* p = c.base + code(m, c.s) * v.dsub;
    if constexpr (SMEM) return *reinterpret_cast<const float4*>(p);
    else return ldg4(p);
  }
  __device__ float load1(const Meta& m, const Col& c) const { return c.base[code(m, c.s) * v.dsub]; }
};

// ---- multi-hash ---------------------------------------------------------------------------------
constexpr int kMaxHashes = 16;  // the spec's limit on k
struct MhF {
  MultiHashView v;
  struct Meta {
    int lane;
  };
  __device__ void block_init() {}
  __device__ static std::uint64_t* buckets(int lane) {
    __shared__ std::uint64_t b[kWarpBagThreads / 32][32][kMaxHashes];
    return b[threadIdx.x >> 5][lane];
  }
  __device__ Meta meta(std::int64_t row, int lane, bool) const {
    std::uint64_t* b = buckets(lane);
    for (std::uint32_t i = 0; i < v.k; ++i) b[i] = multihash_bucket(v, row, i);
    return {lane};
  }
  struct Col {
    std::uint32_t col, i, within;  // concat: the column's hash and its column in the bucket
  };
  __device__ Col column(std::uint32_t col) const {
    const std::uint32_t i = v.mode == HashMode::Concat ? col / v.width : 0;
    return {col, i, col - i * v.width};
  }
  // multihash_value(): s = 0, then each bucket's value added in bucket order (sum), or the
  // column's own bucket (concat).
  __device__ float4 load4(const Meta& m, const Col& c) const {
    const std::uint64_t* b = buckets(m.lane);
    if (v.mode == HashMode::Concat) return ldg4(v.table + b[c.i] * v.width + c.within);
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
    for (std::uint32_t i = 0; i < v.k; ++i) {
      const float4 t = ldg4(v.table + b[i] * v.dim + c.col);
      s.x += t.x, s.y += t.y, s.z += t.z, s.w += t.w;
    }
    return s;
  }
  __device__ float load1(const Meta& m, const Col& c) const {
    const std::uint64_t* b = buckets(m.lane);
    if (v.mode == HashMode::Concat) return __ldg(v.table + b[c.i] * v.width + c.within);
    float s = 0.f;
    for (std::uint32_t i = 0; i < v.k; ++i) s += __ldg(v.table + b[i] * v.dim + c.col);
    return s;
  }
};

// ---- QR ------------------------------------------------------------------------------------------
struct QrF {
  QrView v;
  struct Meta {
    std::uint64_t q, r;
  };
  __device__ void block_init() {}
  __device__ Meta meta(std::int64_t row, int, bool) const {
    const auto u = static_cast<std::uint64_t>(row);
    return {u / v.m, u % v.m};
  }
  using Col = std::uint32_t;
  __device__ Col column(std::uint32_t col) const { return col; }
  __device__ float4 load4(const Meta& m, std::uint32_t col) const {
    const float4 a = ldg4(v.q + m.q * v.dim + col), b = ldg4(v.r + m.r * v.dim + col);
    return make_float4(qr_combine(v.op, a.x, b.x), qr_combine(v.op, a.y, b.y), qr_combine(v.op, a.z, b.z), qr_combine(v.op, a.w, b.w));
  }
  __device__ float load1(const Meta& m, std::uint32_t col) const {
    return qr_combine(v.op, __ldg(v.q + m.q * v.dim + col), __ldg(v.r + m.r * v.dim + col));
  }
};

// ---- pruned --------------------------------------------------------------------------------------
struct PrunedF {
  PrunedView v;
  struct Meta {
    const float* row;
  };
  __device__ void block_init() {}
  __device__ Meta meta(std::int64_t row, int, bool) const {
    const std::int32_t s = __ldg(v.remap + row);
    return {s >= 0 ? v.rows + static_cast<std::uint64_t>(s) * v.dim : v.dflt};
  }
  using Col = std::uint32_t;
  __device__ Col column(std::uint32_t col) const { return col; }
  __device__ float4 load4(const Meta& m, std::uint32_t col) const { return ldg4(m.row + col); }
  __device__ float load1(const Meta& m, std::uint32_t col) const { return __ldg(m.row + col); }
};

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
      float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
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
        if constexpr (VEC) *reinterpret_cast<float4*>(out) = o;
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
    const PqView v{dev<std::uint8_t>("codes"), dev<float>("codebook"), dim_, u32("m"), u32("dsub"), u32("k")};
    const bool vec = v.dsub % 4 == 0;
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
          EDO_CUDA(cudaFuncSetAttribute(warp_bag<F, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(cb)));
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
    const std::uint32_t D = dim_;
    switch (f_.kind) {
      case FormatKind::PQ: return launch_pq(a);
      case FormatKind::MultiHash: {
        const MultiHashView v{dev<float>("table"), static_cast<std::uint64_t>(f_.scalar("buckets")), static_cast<std::uint64_t>(f_.scalar("seed")),
                              D, u32("k"), u32("width"), static_cast<HashMode>(static_cast<int>(f_.scalar("mode")))};
        return run_vec_or_scalar(MhF{v}, a, v.width % 4 == 0 && D % 4 == 0);
      }
      case FormatKind::QR: {
        const QrView v{dev<float>("q"), dev<float>("r"), static_cast<std::uint64_t>(f_.scalar("m")), D,
                       static_cast<QrOp>(static_cast<int>(f_.scalar("op")))};
        return run_vec_or_scalar(QrF{v}, a, D % 4 == 0);
      }
      case FormatKind::Pruned:
        return run_vec_or_scalar(PrunedF{PrunedView{dev<std::int32_t>("remap"), dev<float>("rows"), dev<float>("default"), D}}, a, D % 4 == 0);
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
