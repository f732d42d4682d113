// Internal to edo_kernels_cuda: the lookup kernels of the row formats (fp32, fp16, bf16, fp8,
// int8, int4), written once for the device and the host. row_tables.cu launches them; the unit
// tests (tests/unit/kernels/cuda_row_kernels_test.cpp) run the same thread bodies on the CPU, one
// thread after the other, against the fp64 reference. Only the primitives at the top differ
// between the two compilations (an intrinsic or a PTX instruction on the device, its documented
// definition on the host); the GPU tests check those against the formats' decodes.
//
// Vector path: a sub-warp of G lanes pools one bag (or copies one gathered row): lane l owns the
// row's 16-byte chunks l, l+G, ... (4 fp32, 8 fp16/bf16, 16 fp8/int8 or 32 int4 values), loads
// each with one 128-bit non-coherent load, decodes it in registers and adds w * x to fp32
// accumulators, bag position after bag position (the order the fp64 reference's bound assumes);
// four rows are in flight per lane. Rows whose dimension does not split into whole chunks use
// the scalar path (a warp per bag, lanes over columns, the formats' own row_value()).
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
#pragma once

#include <cstdint>

#include "cuda/bag_args.h"
#include "cuda/prims.h"
#include "edo/kernels/formats/row_formats.h"

namespace edo::kernels::cuda::detail {

// ---- primitives: the device's instruction, or its definition on the host ----------------------
// (loads and stores: prims.h)

// __byte_perm(x, y, s): byte n of the result is byte (s >> 4n) & 7 of the 8 bytes y:x (x the
// low word). Every selector used here has the nibbles' top bit clear (no sign replication).
EDO_HD std::uint32_t byte_perm(std::uint32_t x, std::uint32_t y, std::uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const std::uint64_t v = static_cast<std::uint64_t>(y) << 32 | x;
  std::uint32_t r = 0;
  for (unsigned n = 0; n < 4; ++n) r |= static_cast<std::uint32_t>(v >> (8 * ((s >> (4 * n)) & 7u)) & 0xffu) << (8 * n);
  return r;
#endif
}

// Two fp16 values of a 32-bit word (element 0 in the low half) as floats (exact).
EDO_HD void half2_to_floats(std::uint32_t word, float& lo, float& hi) {
#if defined(__CUDA_ARCH__)
  asm("{\n\t.reg .f16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h;\n\t}" : "=f"(lo), "=f"(hi) : "r"(word));
#else
  lo = half_to_float(static_cast<std::uint16_t>(word & 0xffffu));
  hi = half_to_float(static_cast<std::uint16_t>(word >> 16));
#endif
}

// 2^23 + byte k of `word`, as a float: the byte in the mantissa of 2^23 (0x4B0000qq), exact.
EDO_HD float byte_plus_2p23(std::uint32_t word, std::uint32_t k) { return bits_as_float(byte_perm(word, 0x4B000000u, 0x7540u + k)); }
inline constexpr float k2p23 = 8388608.f;

// Four e4m3 codes of a 32-bit word (element 0 in the low byte) as floats (exact). On the
// device, cvt.rn.f16x2.e4m3x2 converts the low byte of its 16-bit operand into the low half.
EDO_HD void e4m3x4_to_floats(std::uint32_t word, float* out) {
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

// ---- chunk decoders ----------------------------------------------------------------------------

// Per-row parameters of a chunk decode, with the weight folded in where that is exact enough.
struct ChunkParams {
  float w, a, b;  // weight; scale and bias (int8/int4), w * scale (fp8)
};

template <RowKind K> struct Chunk;

template <> struct Chunk<RowKind::F32> {
  static constexpr int kElems = 4;
  EDO_HD static ChunkParams params(const std::uint8_t*, const RowView&, float w) { return {w, 0.f, 0.f}; }
  EDO_HD static void add(const Chunk16& r, const ChunkParams& p, float* acc) {
    acc[0] = fma_f(p.w, bits_as_float(r.x), acc[0]);
    acc[1] = fma_f(p.w, bits_as_float(r.y), acc[1]);
    acc[2] = fma_f(p.w, bits_as_float(r.z), acc[2]);
    acc[3] = fma_f(p.w, bits_as_float(r.w), acc[3]);
  }
};

template <> struct Chunk<RowKind::F16> {
  static constexpr int kElems = 8;
  EDO_HD static ChunkParams params(const std::uint8_t*, const RowView&, float w) { return {w, 0.f, 0.f}; }
  EDO_HD static void add(const Chunk16& r, const ChunkParams& p, float* acc) {
    const std::uint32_t words[4] = {r.x, r.y, r.z, r.w};
EDO_UNROLL
    for (int i = 0; i < 4; ++i) {
      float lo, hi;
      half2_to_floats(words[i], lo, hi);
      acc[2 * i] = fma_f(p.w, lo, acc[2 * i]);
      acc[2 * i + 1] = fma_f(p.w, hi, acc[2 * i + 1]);
    }
  }
};

template <> struct Chunk<RowKind::BF16> {
  static constexpr int kElems = 8;
  EDO_HD static ChunkParams params(const std::uint8_t*, const RowView&, float w) { return {w, 0.f, 0.f}; }
  EDO_HD static void add(const Chunk16& r, const ChunkParams& p, float* acc) {
    const std::uint32_t words[4] = {r.x, r.y, r.z, r.w};
EDO_UNROLL
    for (int i = 0; i < 4; ++i) {
      acc[2 * i] = fma_f(p.w, bits_as_float(words[i] << 16), acc[2 * i]);
      acc[2 * i + 1] = fma_f(p.w, bits_as_float(words[i] & 0xffff0000u), acc[2 * i + 1]);
    }
  }
};

template <> struct Chunk<RowKind::FP8> {
  static constexpr int kElems = 16;
  // Vector path only: dim % 16 == 0, so the per-row scale at row + dim is 16-byte aligned.
  EDO_HD static ChunkParams params(const std::uint8_t* row, const RowView& v, float w) {
    const float s = v.table_scale != 0.f ? v.table_scale : ldg_f32(row + v.dim);
    return {w, w * s, 0.f};
  }
  EDO_HD static void add(const Chunk16& r, const ChunkParams& p, float* acc) {
    const std::uint32_t words[4] = {r.x, r.y, r.z, r.w};
EDO_UNROLL
    for (int i = 0; i < 4; ++i) {
      float e[4];
      e4m3x4_to_floats(words[i], e);
EDO_UNROLL
      for (int j = 0; j < 4; ++j) acc[4 * i + j] = fma_f(e[j], p.a, acc[4 * i + j]);
    }
  }
};

template <> struct Chunk<RowKind::INT8> {
  static constexpr int kElems = 16;
  // Vector path: dim % 16 == 0, the fp32 scale and bias at row + dim are 8-byte aligned.
  EDO_HD static ChunkParams params(const std::uint8_t* row, const RowView& v, float w) {
    ChunkParams p{w, 0.f, 0.f};
    ldg_f32x2(row + v.dim, p.a, p.b);
    return p;
  }
  EDO_HD static void add(const Chunk16& r, const ChunkParams& p, float* acc) {
    const std::uint32_t words[4] = {r.x, r.y, r.z, r.w};
EDO_UNROLL
    for (int i = 0; i < 4; ++i) {
EDO_UNROLL
      for (std::uint32_t k = 0; k < 4; ++k) {
        const float q = byte_plus_2p23(words[i], k) - k2p23;
        acc[4 * i + k] = fma_f(p.w, fma_f(q, p.a, p.b), acc[4 * i + k]);
      }
    }
  }
};

template <> struct Chunk<RowKind::INT4> {
  static constexpr int kElems = 32;
  // Vector path: dim % 32 == 0, the fp16 scale and bias at row + dim/2 are 4-byte aligned.
  EDO_HD static ChunkParams params(const std::uint8_t* row, const RowView& v, float w) {
    ChunkParams p{w, 0.f, 0.f};
    half2_to_floats(ldg_u32(row + v.dim / 2), p.a, p.b);
    return p;
  }
  EDO_HD static void add(const Chunk16& r, const ChunkParams& p, float* acc) {
    const std::uint32_t words[4] = {r.x, r.y, r.z, r.w};
EDO_UNROLL
    for (int i = 0; i < 4; ++i) {
      // Byte k holds element 2k in its low nibble and 2k+1 in its high nibble.
      const std::uint32_t even = words[i] & 0x0f0f0f0fu, odd = (words[i] >> 4) & 0x0f0f0f0fu;
EDO_UNROLL
      for (std::uint32_t k = 0; k < 4; ++k) {
        const float q0 = byte_plus_2p23(even, k) - k2p23;
        const float q1 = byte_plus_2p23(odd, k) - k2p23;
        acc[8 * i + 2 * k] = fma_f(p.w, fma_f(q0, p.a, p.b), acc[8 * i + 2 * k]);
        acc[8 * i + 2 * k + 1] = fma_f(p.w, fma_f(q1, p.a, p.b), acc[8 * i + 2 * k + 1]);
      }
    }
  }
};

// ---- launch geometry ---------------------------------------------------------------------------

// The vector path needs rows of whole 16-byte chunks and a dimension of whole chunks.
template <RowKind K>
EDO_HD bool row_vec_path(std::uint64_t row_bytes, std::uint32_t dim) {
  return row_bytes % 16 == 0 && dim % Chunk<K>::kElems == 0;
}
// Lanes per bag of the vector path: the chunks of a row, rounded up to a power of two, <= 32.
template <RowKind K>
EDO_HD int row_vec_lanes(std::uint32_t dim) {
  const std::uint32_t chunks = dim / Chunk<K>::kElems;
  int g = 1;
  while (g < static_cast<int>(chunks) && g < 32) g *= 2;
  return g;
}
inline constexpr int kRowBlock = 256;  // threads per block of both paths

// ---- thread bodies -----------------------------------------------------------------------------

// Vector path, thread `t` of the grid (G lanes per bag: lane t % G of bag t / G).
template <RowKind K, int G>
EDO_HD void row_bag_vec_thread(const RowView& v, const BagArgs& a, std::int64_t t) {
  using C = Chunk<K>;
  constexpr int EPV = C::kElems;
  const int lane = static_cast<int>(t % G);
  const std::int64_t bag = t / G;
  if (bag >= a.n_bags) return;
  std::int64_t s, e;
  bag_bounds(a, bag, s, e);
  const std::uint32_t chunks = v.dim / EPV;
  for (std::uint32_t c = static_cast<std::uint32_t>(lane); c < chunks; c += G) {
    float acc[EPV];
EDO_UNROLL
    for (int j = 0; j < EPV; ++j) acc[j] = 0.f;
    std::int64_t p = s;
    for (; p + 4 <= e; p += 4) {
      Chunk16 raw[4];
      ChunkParams cp[4];
EDO_UNROLL
      for (int u = 0; u < 4; ++u) {
        const std::int64_t r = a.idx[p + u];
        const float w = a.psw ? a.psw[p + u] : 1.f;
        if (in_range(r, a.rows, p + u, a.err)) {
          const std::uint8_t* row = v.base + static_cast<std::uint64_t>(r) * v.row_bytes;
          raw[u] = load16(row + c * 16u);
          cp[u] = C::params(row, v, w);
        } else {
          raw[u] = Chunk16{0, 0, 0, 0};
          cp[u] = ChunkParams{0.f, 0.f, 0.f};
        }
      }
EDO_UNROLL
      for (int u = 0; u < 4; ++u) C::add(raw[u], cp[u], acc);
    }
    for (; p < e; ++p) {
      const std::int64_t r = a.idx[p];
      if (!in_range(r, a.rows, p, a.err)) continue;
      const std::uint8_t* row = v.base + static_cast<std::uint64_t>(r) * v.row_bytes;
      C::add(load16(row + c * 16u), C::params(row, v, a.psw ? a.psw[p] : 1.f), acc);
    }
    const float scale = bag_scale(a, s, e);
    float* o = a.out + static_cast<std::uint64_t>(bag) * v.dim + c * EPV;
EDO_UNROLL
    for (int j = 0; j < EPV; j += 4) store4(o + j, acc[j] * scale, acc[j + 1] * scale, acc[j + 2] * scale, acc[j + 3] * scale);
  }
}

// Scalar path (any dim / row size), thread `t`: a warp per bag, lane t % 32 over columns.
template <RowKind K>
EDO_HD void row_bag_scalar_thread(const RowView& v, const BagArgs& a, std::int64_t t) {
  const int lane = static_cast<int>(t % 32);
  const std::int64_t bag = t / 32;
  if (bag >= a.n_bags) return;
  std::int64_t s, e;
  bag_bounds(a, bag, s, e);
  for (std::uint32_t d = static_cast<std::uint32_t>(lane); d < v.dim; d += 32) {
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

}  // namespace edo::kernels::cuda::detail
