// CUDA kernels of the row formats (fp32, fp16, bf16, fp8, int8, int4).
//
// A sub-warp of G lanes pools one bag (or copies one gathered row): lane l owns the row's
// 16-byte chunks l, l+G, ... (4 fp32, 8 fp16/bf16, 16 fp8/int8 or 32 int4 values), loads each
// with one 128-bit non-coherent load, decodes it in registers and adds w * x to fp32
// accumulators, bag position after bag position (the order the fp64 reference's bound assumes);
// four rows are in flight per lane. Rows whose dimension does not split into whole chunks use a
// scalar path (a warp per bag, lanes over columns).
//
// The quantised formats are bound by arithmetic, not by memory, unless the decode is cheap
// (issue 10: int4 reached 0.29x of its memory bound with int->float conversions at a quarter
// of the FMA rate). The chunk decoders therefore avoid I2F and software fp8/fp16 decodes:
//   int8/int4  the code goes into the mantissa of 2^23 with one byte permute
//              (0x4B0000qq = 2^23 + q), one exact subtraction gives q as a float, then
//              x = fma(q, scale, bias): bit for bit the formats' int8_dequant/int4_dequant.
//   fp16       cvt.f32.f16 (exact); bf16: a shift (exact).
//   fp8        cvt.rn.f16x2.e4m3x2 (sm_89+, exact) then cvt.f32.f16; the row's scale is folded
//              into the weight: acc = fma(code, w * scale, acc) (the reference's bound allows
//              2u|w x| per element for exactly this).
#include <cuda_runtime.h>

#include "cuda/table_impl.cuh"
#include "edo/kernels/formats/row_formats.h"

namespace edo::kernels::cuda::detail {
namespace {

__device__ __forceinline__ uint4 load16(const std::uint8_t* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }

// Two fp16 values of a 32-bit word (element 0 in the low half) as floats.
__device__ __forceinline__ void half2_to_floats(unsigned int word, float& lo, float& hi) {
  asm("{\n\t.reg .f16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h;\n\t}" : "=f"(lo), "=f"(hi) : "r"(word));
}

// 2^23 + byte k of `word`, as a float: the byte in the mantissa, exact.
__device__ __forceinline__ float byte_plus_2p23(unsigned int word, unsigned int k) {
  return __uint_as_float(__byte_perm(word, 0x4B000000u, 0x7540u + k));
}
constexpr float k2p23 = 8388608.f;

// Four e4m3 codes of a 32-bit word (element 0 in the low byte) as floats.
__device__ __forceinline__ void e4m3x4_to_floats(unsigned int word, float* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned int h01, h23;
  asm("{\n\t.reg .b16 lo, hi;\n\tmov.b32 {lo, hi}, %2;\n\tcvt.rn.f16x2.e4m3x2 %0, lo;\n\tcvt.rn.f16x2.e4m3x2 %1, hi;\n\t}"
      : "=r"(h01), "=r"(h23)
      : "r"(word));
  half2_to_floats(h01, out[0], out[1]);
  half2_to_floats(h23, out[2], out[3]);
#else
  for (int j = 0; j < 4; ++j) out[j] = e4m3_to_float(static_cast<std::uint8_t>(word >> (8 * j)));
#endif
}

// Per-row parameters of a chunk decode, with the weight folded in where that is exact enough.
struct ChunkParams {
  float w, a, b;  // weight; scale and bias (int8/int4), w * scale (fp8)
};

template <RowKind K> struct Chunk;

template <> struct Chunk<RowKind::F32> {
  static constexpr int kElems = 4;
  __device__ static ChunkParams params(const std::uint8_t*, const RowView&, float w) { return {w, 0.f, 0.f}; }
  __device__ static void add(const uint4& r, const ChunkParams& p, float* acc) {
    acc[0] = fmaf(p.w, __uint_as_float(r.x), acc[0]);
    acc[1] = fmaf(p.w, __uint_as_float(r.y), acc[1]);
    acc[2] = fmaf(p.w, __uint_as_float(r.z), acc[2]);
    acc[3] = fmaf(p.w, __uint_as_float(r.w), acc[3]);
  }
};

template <> struct Chunk<RowKind::F16> {
  static constexpr int kElems = 8;
  __device__ static ChunkParams params(const std::uint8_t*, const RowView&, float w) { return {w, 0.f, 0.f}; }
  __device__ static void add(const uint4& r, const ChunkParams& p, float* acc) {
    const unsigned int words[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float lo, hi;
      half2_to_floats(words[i], lo, hi);
      acc[2 * i] = fmaf(p.w, lo, acc[2 * i]);
      acc[2 * i + 1] = fmaf(p.w, hi, acc[2 * i + 1]);
    }
  }
};

template <> struct Chunk<RowKind::BF16> {
  static constexpr int kElems = 8;
  __device__ static ChunkParams params(const std::uint8_t*, const RowView&, float w) { return {w, 0.f, 0.f}; }
  __device__ static void add(const uint4& r, const ChunkParams& p, float* acc) {
    const unsigned int words[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      acc[2 * i] = fmaf(p.w, __uint_as_float(words[i] << 16), acc[2 * i]);
      acc[2 * i + 1] = fmaf(p.w, __uint_as_float(words[i] & 0xffff0000u), acc[2 * i + 1]);
    }
  }
};

template <> struct Chunk<RowKind::FP8> {
  static constexpr int kElems = 16;
  // Vector path only: dim % 16 == 0, so the per-row scale at row + dim is 16-byte aligned.
  __device__ static ChunkParams params(const std::uint8_t* row, const RowView& v, float w) {
    const float s = v.table_scale != 0.f ? v.table_scale : __ldg(reinterpret_cast<const float*>(row + v.dim));
    return {w, w * s, 0.f};
  }
  __device__ static void add(const uint4& r, const ChunkParams& p, float* acc) {
    const unsigned int words[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float e[4];
      e4m3x4_to_floats(words[i], e);
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[4 * i + j] = fmaf(e[j], p.a, acc[4 * i + j]);
    }
  }
};

template <> struct Chunk<RowKind::INT8> {
  static constexpr int kElems = 16;
  // Vector path: dim % 16 == 0, the fp32 scale and bias at row + dim are 8-byte aligned.
  __device__ static ChunkParams params(const std::uint8_t* row, const RowView& v, float w) {
    const float2 sb = __ldg(reinterpret_cast<const float2*>(row + v.dim));
    return {w, sb.x, sb.y};
  }
  __device__ static void add(const uint4& r, const ChunkParams& p, float* acc) {
    const unsigned int words[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (unsigned int k = 0; k < 4; ++k) {
        const float q = byte_plus_2p23(words[i], k) - k2p23;
        acc[4 * i + k] = fmaf(p.w, fmaf(q, p.a, p.b), acc[4 * i + k]);
      }
    }
  }
};

template <> struct Chunk<RowKind::INT4> {
  static constexpr int kElems = 32;
  // Vector path: dim % 32 == 0, the fp16 scale and bias at row + dim/2 are 4-byte aligned.
  __device__ static ChunkParams params(const std::uint8_t* row, const RowView& v, float w) {
    float s, b;
    half2_to_floats(__ldg(reinterpret_cast<const unsigned int*>(row + v.dim / 2)), s, b);
    return {w, s, b};
  }
  __device__ static void add(const uint4& r, const ChunkParams& p, float* acc) {
    const unsigned int words[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      // Byte k holds element 2k in its low nibble and 2k+1 in its high nibble.
      const unsigned int even = words[i] & 0x0f0f0f0fu, odd = (words[i] >> 4) & 0x0f0f0f0fu;
#pragma unroll
      for (unsigned int k = 0; k < 4; ++k) {
        const float q0 = byte_plus_2p23(even, k) - k2p23;
        const float q1 = byte_plus_2p23(odd, k) - k2p23;
        acc[8 * i + 2 * k] = fmaf(p.w, fmaf(q0, p.a, p.b), acc[8 * i + 2 * k]);
        acc[8 * i + 2 * k + 1] = fmaf(p.w, fmaf(q1, p.a, p.b), acc[8 * i + 2 * k + 1]);
      }
    }
  }
};

// Vector path: G lanes per bag, lane l owns chunks l, l+G, ...
template <RowKind K, int G>
__global__ void __launch_bounds__(256) row_bag_vec(RowView v, BagArgs a) {
  using C = Chunk<K>;
  constexpr int EPV = C::kElems;
  const int lane = threadIdx.x % G;
  const std::int64_t bag = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G;
  if (bag >= a.n_bags) return;
  std::int64_t s, e;
  bag_bounds(a, bag, s, e);
  const std::uint32_t chunks = v.dim / EPV;
  for (std::uint32_t c = lane; c < chunks; c += G) {
    float acc[EPV];
#pragma unroll
    for (int j = 0; j < EPV; ++j) acc[j] = 0.f;
    std::int64_t p = s;
    for (; p + 4 <= e; p += 4) {
      uint4 raw[4];
      ChunkParams cp[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const std::int64_t r = a.idx[p + u];
        const float w = a.psw ? a.psw[p + u] : 1.f;
        if (in_range(r, a.rows, p + u, a.err)) {
          const std::uint8_t* row = v.base + static_cast<std::uint64_t>(r) * v.row_bytes;
          raw[u] = load16(row + c * 16u);
          cp[u] = C::params(row, v, w);
        } else {
          raw[u] = make_uint4(0, 0, 0, 0);
          cp[u] = ChunkParams{0.f, 0.f, 0.f};
        }
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) C::add(raw[u], cp[u], acc);
    }
    for (; p < e; ++p) {
      const std::int64_t r = a.idx[p];
      if (!in_range(r, a.rows, p, a.err)) continue;
      const std::uint8_t* row = v.base + static_cast<std::uint64_t>(r) * v.row_bytes;
      C::add(load16(row + c * 16u), C::params(row, v, a.psw ? a.psw[p] : 1.f), acc);
    }
    const float scale = bag_scale(a, s, e);
    float4* o = reinterpret_cast<float4*>(a.out + static_cast<std::uint64_t>(bag) * v.dim + c * EPV);
#pragma unroll
    for (int j = 0; j < EPV; j += 4) o[j / 4] = make_float4(acc[j] * scale, acc[j + 1] * scale, acc[j + 2] * scale, acc[j + 3] * scale);
  }
}

// Scalar path (any dim / row size): a warp per bag, lanes over columns, the formats' own
// row_value() per element.
template <RowKind K>
__global__ void row_bag_scalar(RowView v, BagArgs a) {
  const int lane = threadIdx.x % 32;
  const std::int64_t bag = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (bag >= a.n_bags) return;
  std::int64_t s, e;
  bag_bounds(a, bag, s, e);
  for (std::uint32_t d = lane; d < v.dim; d += 32) {
    float acc = 0.f;
    for (std::int64_t p = s; p < e; ++p) {
      const std::int64_t r = a.idx[p];
      if (!in_range(r, a.rows, p, a.err)) continue;
      const std::uint8_t* row = v.base + static_cast<std::uint64_t>(r) * v.row_bytes;
      acc = fma_f(a.psw ? a.psw[p] : 1.f, row_value<K>(row, d, row_params<K>(row, v.dim, v.table_scale)), acc);
    }
    a.out[static_cast<std::uint64_t>(bag) * v.dim + d] = acc * bag_scale(a, s, e);
  }
}

// Backward: W[row] -= lr * w * grad[bag] (/len for mean), atomically; 16-bit formats use a
// compare-and-swap on the aligned 32-bit word, rounding with the format's own conversion.
template <RowKind K>
__device__ void atomic_sub_elem(std::uint8_t* row, std::uint32_t d, float delta) {
  if constexpr (K == RowKind::F32) {
    atomicAdd(reinterpret_cast<float*>(row) + d, -delta);
  } else {
    auto* h = reinterpret_cast<std::uint16_t*>(row) + d;
    auto* word = reinterpret_cast<unsigned int*>(reinterpret_cast<std::uintptr_t>(h) & ~std::uintptr_t{3});
    const unsigned int shift = (reinterpret_cast<std::uintptr_t>(h) & 2u) ? 16u : 0u;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      const std::uint16_t cur = static_cast<std::uint16_t>((assumed >> shift) & 0xffffu);
      const float f = (K == RowKind::F16 ? half_to_float(cur) : bf16_to_float(cur)) - delta;
      const std::uint16_t nw = K == RowKind::F16 ? float_to_half(f) : float_to_bf16(f);
      const unsigned int repl = (assumed & ~(0xffffu << shift)) | (static_cast<unsigned int>(nw) << shift);
      old = atomicCAS(word, assumed, repl);
    } while (old != assumed);
  }
}

template <RowKind K>
__global__ void row_backward(RowView v, BagArgs a, const float* grad, float lr) {
  const int lane = threadIdx.x % 32;
  const std::int64_t bag = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (bag >= a.n_bags) return;
  std::int64_t s, e;
  bag_bounds(a, bag, s, e);
  const float inv = bag_scale(a, s, e);
  for (std::int64_t p = s; p < e; ++p) {
    const std::int64_t r = a.idx[p];
    if (!in_range(r, a.rows, p, a.err)) continue;
    const float w = (a.psw ? a.psw[p] : 1.f) * inv * lr;
    std::uint8_t* row = const_cast<std::uint8_t*>(v.base) + static_cast<std::uint64_t>(r) * v.row_bytes;
    for (std::uint32_t d = lane; d < v.dim; d += 32) atomic_sub_elem<K>(row, d, w * grad[static_cast<std::uint64_t>(bag) * v.dim + d]);
  }
}

class RowTableImpl final : public TableImpl {
 public:
  explicit RowTableImpl(const EncodedTable& t) : TableImpl(t) {
    const FormatData f = t.format_data();
    kind_ = static_cast<RowKind>(static_cast<int>(f.kind));  // FormatKind's first six match RowKind
    row_bytes_ = f.row_bytes;
    rows_buf_ = upload_array(f, "rows");
    table_scale_ = static_cast<float>(f.scalar("table_scale"));
  }
  void backward(const std::int64_t* idx, std::int64_t, const std::int64_t* offsets, std::int64_t n_bags, const float* psw, Pooling mode,
                const float* grad, float lr) override {
    const BagArgs a = args(idx, offsets, n_bags, psw, mode, nullptr);
    const RowView v = view();
    const int grid = blocks_for(n_bags * 32, 256);
    switch (kind_) {
      case RowKind::F32: row_backward<RowKind::F32><<<grid, 256, 0, stream_>>>(v, a, grad, lr); break;
      case RowKind::F16: row_backward<RowKind::F16><<<grid, 256, 0, stream_>>>(v, a, grad, lr); break;
      case RowKind::BF16: row_backward<RowKind::BF16><<<grid, 256, 0, stream_>>>(v, a, grad, lr); break;
      default: throw std::logic_error("this strategy has no backward (fp32, fp16 and bf16 only)");
    }
    EDO_CUDA(cudaGetLastError());
  }

 private:
  RowView view() const { return RowView{rows_buf_.as<std::uint8_t>(), row_bytes_, dim_, table_scale_}; }
  template <RowKind K>
  void launch_kind(const BagArgs& a) {
    constexpr int EPV = Chunk<K>::kElems;
    const RowView v = view();
    const bool vec = row_bytes_ % 16 == 0 && dim_ % EPV == 0;
    if (vec) {
      const std::uint32_t chunks = dim_ / EPV;
      int g = 1;
      while (g < static_cast<int>(chunks) && g < 32) g *= 2;
      const int grid = blocks_for(a.n_bags * g, 256);
      switch (g) {
        case 1: row_bag_vec<K, 1><<<grid, 256, 0, stream_>>>(v, a); break;
        case 2: row_bag_vec<K, 2><<<grid, 256, 0, stream_>>>(v, a); break;
        case 4: row_bag_vec<K, 4><<<grid, 256, 0, stream_>>>(v, a); break;
        case 8: row_bag_vec<K, 8><<<grid, 256, 0, stream_>>>(v, a); break;
        case 16: row_bag_vec<K, 16><<<grid, 256, 0, stream_>>>(v, a); break;
        default: row_bag_vec<K, 32><<<grid, 256, 0, stream_>>>(v, a); break;
      }
    } else {
      row_bag_scalar<K><<<blocks_for(a.n_bags * 32, 256), 256, 0, stream_>>>(v, a);
    }
    EDO_CUDA(cudaGetLastError());
  }
  void launch(const BagArgs& a, std::int64_t) override {
    switch (kind_) {
      case RowKind::F32: return launch_kind<RowKind::F32>(a);
      case RowKind::F16: return launch_kind<RowKind::F16>(a);
      case RowKind::BF16: return launch_kind<RowKind::BF16>(a);
      case RowKind::FP8: return launch_kind<RowKind::FP8>(a);
      case RowKind::INT8: return launch_kind<RowKind::INT8>(a);
      case RowKind::INT4: return launch_kind<RowKind::INT4>(a);
    }
  }
  RowKind kind_;
  std::uint64_t row_bytes_;
  DeviceBuffer rows_buf_;
  float table_scale_ = 0.f;
};

}  // namespace

std::unique_ptr<DeviceTable> make_row_table(const EncodedTable& t) { return std::make_unique<RowTableImpl>(t); }

}  // namespace edo::kernels::cuda::detail
