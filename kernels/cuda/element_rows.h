// Internal to edo_kernels_cuda: how the warp-per-bag kernel (warp_bag.cuh) reads a row of PQ,
// multi-hash, QR and pruned tables (offload's are in offload_rows.h). Host and device code: the
// unit tests (tests/unit/kernels/cuda_element_rows_test.cpp) check on the CPU that every
// format's meta/column/load4/load1 give its decode bit for bit.
//
// A format F provides (warp_bag.cuh says how the kernel uses them):
//   struct Meta (trivially copyable, <= 16 bytes, shuffled as 32-bit words)
//   Meta meta(std::int64_t row, int lane, bool first) const  // by the lane that loaded the
//        index; first: the first column pass of the bag (count statistics only then)
//   struct Col; Col column(std::uint32_t col) const  // what a lane's columns need, worked out
//        once per pass (divisions stay out of the row loop)
//   Float4 load4(const Meta&, const Col&) const  // columns col..col+3 (vector path)
//   float load1(const Meta&, const Col&) const   // column col (scalar path)
//   void block_init()  // shared-memory set-up (PQ's codebook); a no-op on the host
//
// Where the time goes and what each does about it (issue 10, item 4; bounds in
// `edo bench --backend cuda`):
//   PQ          m code bytes per row from DRAM, then m sub-vectors from the codebook. The
//               codebook (k x D x 4 B, 128 KiB at D = 128) is copied into shared memory once
//               per block (persistent grid) when it fits; each row's codes (m <= 16) are loaded
//               by one lane and broadcast in Meta, so the inner loop reads only shared memory.
//   multi-hash  the k buckets of a row are hashed once (by the lane that loaded the index; a
//               64-bit modulo each) into shared memory, not once per element.
//   QR          quotient and remainder once per row, two 16-byte rows per lane.
//   pruned      the 4-byte remap entries of 32 rows are read in parallel, then the rows.
#pragma once

#include <cstdint>

#include "cuda/bag_args.h"
#include "cuda/prims.h"
#include "edo/kernels/formats/multihash.h"
#include "edo/kernels/formats/pq.h"
#include "edo/kernels/formats/pruned.h"
#include "edo/kernels/formats/qr.h"
#include "edo/kernels/strategy.h"

namespace edo::kernels::cuda::detail {

// ---- PQ ------------------------------------------------------------------------------------------
// SMEM: codebook in dynamic shared memory. CODES16: m <= 16, the row's codes travel in Meta.
template <bool SMEM, bool CODES16>
struct PqF {
  PqView v;
  struct Meta {
    unsigned int w[CODES16 ? 4 : 2];  // the codes (little endian), or the row id
  };
  EDO_HD void block_init() {
#if defined(__CUDA_ARCH__)
    if constexpr (SMEM) {
      extern __shared__ float4 pq_smem[];
      const std::uint64_t n4 = static_cast<std::uint64_t>(v.m) * v.k * v.dsub / 4;
      const float4* src = reinterpret_cast<const float4*>(v.codebook);
      for (std::uint64_t i = threadIdx.x; i < n4; i += blockDim.x) pq_smem[i] = __ldg(src + i);
      __syncthreads();
      v.codebook = reinterpret_cast<const float*>(pq_smem);
    }
#endif
  }
  EDO_HD Meta meta(std::int64_t row, int, bool) const {
    Meta m{};
    if constexpr (CODES16) {
      const std::uint8_t* c = v.codes + static_cast<std::uint64_t>(row) * v.m;
      if (v.m == 16) {  // one 16-byte load (row * 16 is 16-byte aligned)
        const Chunk16 q = load16(c);
        m.w[0] = q.x, m.w[1] = q.y, m.w[2] = q.z, m.w[3] = q.w;
      } else {  // byte by byte; constant indices only, so the words stay in registers
        unsigned int w0 = 0, w1 = 0, w2 = 0, w3 = 0;
        for (std::uint32_t s = 0; s < v.m; ++s) {
          const unsigned int b = static_cast<unsigned int>(ldg_t(c + s)) << ((s & 3) * 8);
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
  EDO_HD std::uint32_t code(const Meta& m, std::uint32_t s) const {
    if constexpr (CODES16) {
      const unsigned int q = (s >> 2) == 0 ? m.w[0] : (s >> 2) == 1 ? m.w[1] : (s >> 2) == 2 ? m.w[2] : m.w[3];
      return (q >> ((s & 3) * 8)) & 0xffu;
    } else {
      const std::uint64_t row = m.w[0] | static_cast<std::uint64_t>(m.w[1]) << 32;
      return ldg_t(v.codes + row * v.m + s);
    }
  }
  // The column's sub-space and where its centroids start: codebook[s][c][col - s*dsub] is
  // base + c * dsub.
  struct Col {
    std::uint32_t s;
    const float* base;
  };
  EDO_HD Col column(std::uint32_t col) const {
    const std::uint32_t s = col / v.dsub;
    return {s, v.codebook + static_cast<std::uint64_t>(s) * v.k * v.dsub + (col - s * v.dsub)};
  }
  EDO_HD Float4 load4(const Meta& m, const Col& c) const {
    const float* p = c.base + code(m, c.s) * v.dsub;
    if constexpr (SMEM) return ld4(p);
    else return ldg4(p);
  }
  EDO_HD float load1(const Meta& m, const Col& c) const { return c.base[code(m, c.s) * v.dsub]; }
};

// ---- multi-hash ---------------------------------------------------------------------------------
constexpr int kMaxHashes = 16;  // the spec's limit on k
struct MhF {
  MultiHashView v;
  struct Meta {
    int lane;
  };
  EDO_HD void block_init() {}
  // The k buckets of the row lane `lane` of this warp loaded.
  EDO_HD static std::uint64_t* buckets(int lane) {
#if defined(__CUDA_ARCH__)
    __shared__ std::uint64_t b[kWarpBagThreads / 32][32][kMaxHashes];
    return b[threadIdx.x >> 5][lane];
#else
    static thread_local std::uint64_t b[32][kMaxHashes];  // a fake launch runs one warp at a time
    return b[lane];
#endif
  }
  EDO_HD Meta meta(std::int64_t row, int lane, bool) const {
    std::uint64_t* b = buckets(lane);
    for (std::uint32_t i = 0; i < v.k; ++i) b[i] = multihash_bucket(v, row, i);
    return {lane};
  }
  struct Col {
    std::uint32_t col, i, within;  // concat: the column's hash and its column in the bucket
  };
  EDO_HD Col column(std::uint32_t col) const {
    const std::uint32_t i = v.mode == HashMode::Concat ? col / v.width : 0;
    return {col, i, col - i * v.width};
  }
  // multihash_value(): s = 0, then each bucket's value added in bucket order (sum), or the
  // column's own bucket (concat).
  EDO_HD Float4 load4(const Meta& m, const Col& c) const {
    const std::uint64_t* b = buckets(m.lane);
    if (v.mode == HashMode::Concat) return ldg4(v.table + b[c.i] * v.width + c.within);
    Float4 s{0.f, 0.f, 0.f, 0.f};
    for (std::uint32_t i = 0; i < v.k; ++i) {
      const Float4 t = ldg4(v.table + b[i] * v.dim + c.col);
      s.x += t.x, s.y += t.y, s.z += t.z, s.w += t.w;
    }
    return s;
  }
  EDO_HD float load1(const Meta& m, const Col& c) const {
    const std::uint64_t* b = buckets(m.lane);
    if (v.mode == HashMode::Concat) return ldg(v.table + b[c.i] * v.width + c.within);
    float s = 0.f;
    for (std::uint32_t i = 0; i < v.k; ++i) s += ldg(v.table + b[i] * v.dim + c.col);
    return s;
  }
};

// ---- QR ------------------------------------------------------------------------------------------
struct QrF {
  QrView v;
  struct Meta {
    std::uint64_t q, r;
  };
  EDO_HD void block_init() {}
  EDO_HD Meta meta(std::int64_t row, int, bool) const {
    const auto u = static_cast<std::uint64_t>(row);
    return {u / v.m, u % v.m};
  }
  using Col = std::uint32_t;
  EDO_HD Col column(std::uint32_t col) const { return col; }
  EDO_HD Float4 load4(const Meta& m, std::uint32_t col) const {
    const Float4 a = ldg4(v.q + m.q * v.dim + col), b = ldg4(v.r + m.r * v.dim + col);
    return {qr_combine(v.op, a.x, b.x), qr_combine(v.op, a.y, b.y), qr_combine(v.op, a.z, b.z), qr_combine(v.op, a.w, b.w)};
  }
  EDO_HD float load1(const Meta& m, std::uint32_t col) const {
    return qr_combine(v.op, ldg(v.q + m.q * v.dim + col), ldg(v.r + m.r * v.dim + col));
  }
};

// ---- pruned --------------------------------------------------------------------------------------
struct PrunedF {
  PrunedView v;
  struct Meta {
    const float* row;
  };
  EDO_HD void block_init() {}
  EDO_HD Meta meta(std::int64_t row, int, bool) const {
    const std::int32_t s = ldg_t(v.remap + row);
    return {s >= 0 ? v.rows + static_cast<std::uint64_t>(s) * v.dim : v.dflt};
  }
  using Col = std::uint32_t;
  EDO_HD Col column(std::uint32_t col) const { return col; }
  EDO_HD Float4 load4(const Meta& m, std::uint32_t col) const { return ldg4(m.row + col); }
  EDO_HD float load1(const Meta& m, std::uint32_t col) const { return ldg(m.row + col); }
};

// ---- views from a table's format data ---------------------------------------------------------
// `ptr(name)` is the address of the named array where the kernel reads it: a device buffer
// (element_tables.cu), or the host copy (the unit tests). Host code.
inline std::uint32_t scalar_u32(const FormatData& f, const char* name) { return static_cast<std::uint32_t>(f.scalar(name)); }

template <class Ptr>
PqView pq_view(const FormatData& f, Ptr&& ptr) {
  return PqView{static_cast<const std::uint8_t*>(ptr("codes")), static_cast<const float*>(ptr("codebook")), f.dim, scalar_u32(f, "m"),
                scalar_u32(f, "dsub"), scalar_u32(f, "k")};
}
template <class Ptr>
MultiHashView multihash_view(const FormatData& f, Ptr&& ptr) {
  return MultiHashView{static_cast<const float*>(ptr("table")), static_cast<std::uint64_t>(f.scalar("buckets")),
                       static_cast<std::uint64_t>(f.scalar("seed")), f.dim, scalar_u32(f, "k"), scalar_u32(f, "width"),
                       static_cast<HashMode>(static_cast<int>(f.scalar("mode")))};
}
template <class Ptr>
QrView qr_view(const FormatData& f, Ptr&& ptr) {
  return QrView{static_cast<const float*>(ptr("q")), static_cast<const float*>(ptr("r")), static_cast<std::uint64_t>(f.scalar("m")), f.dim,
                static_cast<QrOp>(static_cast<int>(f.scalar("op")))};
}
template <class Ptr>
PrunedView pruned_view(const FormatData& f, Ptr&& ptr) {
  return PrunedView{static_cast<const std::int32_t*>(ptr("remap")), static_cast<const float*>(ptr("rows")),
                    static_cast<const float*>(ptr("default")), f.dim};
}

// The vector path (4 columns per lane, 16-byte loads) needs 16-byte aligned column groups.
inline bool pq_vec(const PqView& v) { return v.dsub % 4 == 0; }
inline bool multihash_vec(const MultiHashView& v) { return v.width % 4 == 0 && v.dim % 4 == 0; }
inline bool qr_vec(const QrView& v) { return v.dim % 4 == 0; }
inline bool pruned_vec(const PrunedView& v) { return v.dim % 4 == 0; }

}  // namespace edo::kernels::cuda::detail
