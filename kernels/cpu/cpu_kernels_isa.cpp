// Hot loops of the CPU backend. This file is compiled once per instruction set (see
// kernels/cpu/CMakeLists.txt) with EDO_ISA_NS naming the namespace; cpu_kernels.cpp picks one.
// Every element is decoded by the format's EDO_HD function from kernels/formats; the loops
// here only add threading, prefetch and vectorisation-friendly structure.
#include <omp.h>
#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "cpu/cpu_kernels.h"
#include "cpu/thread_team.h"

#ifndef EDO_ISA_NS
#error "EDO_ISA_NS must name the instruction-set namespace"
#endif

namespace edo::kernels::cpu::EDO_ISA_NS {
namespace {

// Prefetch every cache line of [p, p + bytes) into L2 (prefetcht1, locality 2), not L1: a
// row far ahead does not need L1 yet, and L2 tracks many more misses in flight than L1. Random
// row reads are bound by misses in flight (latency x bandwidth); on the development VM, in one
// interleaved run, prefetcht1 read 512-byte rows 15 % faster and 144-byte (int8) rows 45 %
// faster than prefetcht0 (the hardware's own prefetchers bring the lines on to L1).
constexpr int kPrefetchLocality = 2;
inline void prefetch_bytes(const void* p, std::uint64_t bytes) {
  const auto start = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t end = start + bytes;
  for (std::uintptr_t a = start & ~std::uintptr_t{63}; a < end; a += 64) __builtin_prefetch(reinterpret_cast<const void*>(a), 0, kPrefetchLocality);
}


// fp16 -> fp32 for 8 values at once with the F16C instruction (avx2 and avx512 builds).
// The conversion is exact, so it equals kernels/formats' half_to_float() on every finite
// value (tests/unit/kernels checks all 63488 of them through each instruction set).
#if defined(__F16C__)
constexpr bool kHaveF16c = true;
inline __m256 half8_to_float8(const std::uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
#else
constexpr bool kHaveF16c = false;
#endif

// Generic driver. Acc provides:
//   void prefetch(std::int64_t pos) const        prefetch what the lookup at position pos needs
//   void accumulate(std::int64_t row, float w, float* acc) const   acc += w * row
//   void copy(std::int64_t row, float* out) const                   out = row
//   std::uint32_t acc_width() const              floats in the accumulator (dim, or rank)
//   void finish(const float* acc, float scale, float* out) const    out = scale * f(acc)
template <class F>
void parallel(int nt, F& f) {
  cpu::team_run(nt, [](void* c, int t, int T) { (*static_cast<F*>(c))(t, T); }, &f);
}

// Work is handed out in chunks of about 2048 indices from a shared counter: a thread that is
// descheduled for a while (shared machine) does not hold the others up. Prefetch runs ahead
// across chunk boundaries (bounded by the batch).
template <class Acc>
void run_lookup(const Acc& a, const LookupArgs& g) {
  const std::uint32_t D = g.dim;
  // Small calls run on the calling thread: waking a team costs more than the work.
  const int nt = g.n < 1024 ? 1 : std::max(1, g.threads);
  const int pf = g.prefetch;
  constexpr std::int64_t kChunkIndices = 2048;
  std::atomic<std::int64_t> next{0};
  if (!g.offsets) {
    const std::int64_t chunks = (g.n + kChunkIndices - 1) / kChunkIndices;
    auto body = [&](int, int) {
      for (std::int64_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;) {
        const std::int64_t lo = c * kChunkIndices, hi = std::min(g.n, lo + kChunkIndices);
        for (std::int64_t i = lo; i < hi; ++i) {
          if (i + pf < g.n) a.prefetch(i + pf);
          a.copy(g.idx[i], g.out + static_cast<std::uint64_t>(i) * D);
        }
      }
    };
    parallel(nt, body);
    return;
  }
  // Bags per chunk: about kChunkIndices indices on average.
  const std::int64_t per = std::max<std::int64_t>(1, g.n_bags * kChunkIndices / std::max<std::int64_t>(1, g.n));
  const std::int64_t chunks = (g.n_bags + per - 1) / per;
  auto body = [&](int, int) {
    // A compile-time width (Acc::kWidth > 0) lets the compiler keep the accumulator in
    // vector registers; otherwise it lives in a per-thread buffer.
    constexpr std::uint32_t KW = Acc::kWidth;
    const std::uint32_t W = KW ? KW : a.acc_width();
    std::vector<float> accv(KW ? 0 : W + 16);
    alignas(64) float local[KW ? KW + 16 : 1];
    float* acc = KW ? local : accv.data();
    for (std::int64_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;) {
      const std::int64_t b0 = c * per, b1 = std::min(g.n_bags, b0 + per);
      for (std::int64_t b = b0; b < b1; ++b) {
        const std::int64_t s = g.offsets[b], e = g.offsets[b + 1];
        for (std::uint32_t k = 0; k < W; ++k) acc[k] = 0.f;
        for (std::int64_t p = s; p < e; ++p) {
          if (p + pf < g.n) a.prefetch(p + pf);
          a.accumulate(g.idx[p], g.psw ? g.psw[p] : 1.f, acc);
        }
        const float scale = (g.mode == Pooling::Mean && e > s) ? 1.f / static_cast<float>(e - s) : 1.f;
        a.finish(acc, scale, g.out + static_cast<std::uint64_t>(b) * D);
      }
    }
  };
  parallel(nt, body);
}

struct DimFinish {
  static constexpr std::uint32_t kWidth = 0;
  std::uint32_t D;
  std::uint32_t acc_width() const { return D; }
  void finish(const float* __restrict acc, float scale, float* __restrict out) const {
    for (std::uint32_t d = 0; d < D; ++d) out[d] = acc[d] * scale;
  }
};

// A row's scale and bias. int4 keeps them as fp16: with F16C both are widened by one
// instruction (exact, as half_to_float) instead of two branchy scalar decodes per row.
template <RowKind K>
RowParams params_of(const std::uint8_t* p, std::uint32_t D, float table_scale) {
#if defined(__F16C__)
  if constexpr (K == RowKind::INT4) {
    std::uint32_t halves;
    std::memcpy(&halves, p + int4_code_bytes(D), sizeof halves);
    const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(halves)));
    return {_mm_cvtss_f32(f), _mm_cvtss_f32(_mm_shuffle_ps(f, f, 1))};
  }
#endif
  return row_params<K>(p, D, table_scale);
}

#if defined(__AVX2__)
// 8 bytes of int4 codes (16 elements) decoded: the 8 low nibbles (even elements) into `even`,
// the 8 high ones into `odd`, each fma(q, scale, bias) as int4_dequant (bit for bit).
inline void int4_decode16(const std::uint8_t* p, RowParams rp, __m256& even, __m256& odd) {
  std::uint64_t bytes;
  std::memcpy(&bytes, p, sizeof bytes);
  const __m256i x = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(bytes)));
  const __m256 a = _mm256_set1_ps(rp.a), b = _mm256_set1_ps(rp.b);
  even = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(x, _mm256_set1_epi32(0xf))), a, b);
  odd = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(x, 4)), a, b);
}
#endif

// KD > 0: the dimension is the compile-time constant KD (common sizes get their own code).
template <RowKind K, std::uint32_t KD = 0>
struct RowAcc {
  static constexpr std::uint32_t kWidth = KD;
  const std::uint8_t* base;
  std::uint64_t rb;
  float ts;
  const std::int64_t* idx;
  const std::uint32_t Dr;
  RowAcc(const RowView& v, const LookupArgs& g) : base(v.base), rb(v.row_bytes), ts(v.table_scale), idx(g.idx), Dr(v.dim) {}
  // int8/int4 elements are decoded (fma(q, scale, bias), as decode_rows and the GPU do) and
  // then added: the accumulator holds the sum of the decoded rows. Adding sum_k w_k scale_k q_k
  // and the biases apart saves an FMA per element but sums large positive and negative
  // quantities whose difference is the result: on a 5000-row bag it drifted ~1e-3 relative.
  // int4 at a compile-time even width: the accumulator holds the even elements, then the odd
  // ones (a row's low nibbles, then its high nibbles), so the per-row loop needs no shuffle;
  // finish() interleaves once per bag.
  static constexpr bool kSplitNibbles = K == RowKind::INT4 && KD > 0 && KD % 2 == 0;
  // fp16 at a compile-time width of whole 8-value groups: converted with F16C.
  static constexpr bool kF16c = K == RowKind::F16 && kHaveF16c && KD > 0 && KD % 8 == 0;
  std::uint32_t acc_width() const { return KD ? KD : Dr; }
  void finish(const float* __restrict acc, float scale, float* __restrict out) const {
    const std::uint32_t D = KD ? KD : Dr;
    if constexpr (kSplitNibbles) {
      for (std::uint32_t i = 0; i < KD / 2; ++i) {
        out[2 * i] = acc[i] * scale;
        out[2 * i + 1] = acc[KD / 2 + i] * scale;
      }
    } else {
      for (std::uint32_t d = 0; d < D; ++d) out[d] = acc[d] * scale;
    }
  }
  const std::uint8_t* row(std::int64_t r) const { return base + static_cast<std::uint64_t>(r) * rb; }
  void prefetch(std::int64_t pos) const { prefetch_bytes(row(idx[pos]), rb); }
  void accumulate(std::int64_t r, float w, float* __restrict acc) const {
    const std::uint32_t D = KD ? KD : Dr;
    const std::uint8_t* __restrict p = row(r);
    const RowParams rp = params_of<K>(p, D, ts);
    if constexpr (K == RowKind::INT4) {
      // Two elements per byte, the even one in the low nibble.
      if constexpr (kSplitNibbles) {
        float* __restrict odd = acc + KD / 2;
#if defined(__AVX2__)
        // 8 bytes -> 8 low and 8 high nibbles as int32 -> float, the same fma chain as below
        // (bit for bit); compilers unpacked the nibbles one byte at a time.
        if constexpr (KD % 16 == 0) {
          const __m256 wv = _mm256_set1_ps(w);
          for (std::uint32_t i = 0; i < KD / 2; i += 8) {
            __m256 ev, od;
            int4_decode16(p + i, rp, ev, od);
            _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(wv, ev, _mm256_loadu_ps(acc + i)));
            _mm256_storeu_ps(odd + i, _mm256_fmadd_ps(wv, od, _mm256_loadu_ps(odd + i)));
          }
          return;
        }
#endif
        for (std::uint32_t i = 0; i < KD / 2; ++i) {
          const std::uint32_t byte = p[i];
          acc[i] = fma_f(w, int4_dequant(byte & 0xfu, rp.a, rp.b), acc[i]);
          odd[i] = fma_f(w, int4_dequant(byte >> 4, rp.a, rp.b), odd[i]);
        }
      } else {
        const std::uint32_t half = D / 2;
        for (std::uint32_t i = 0; i < half; ++i) {
          const std::uint32_t byte = p[i];
          acc[2 * i] = fma_f(w, int4_dequant(byte & 0xfu, rp.a, rp.b), acc[2 * i]);
          acc[2 * i + 1] = fma_f(w, int4_dequant(byte >> 4, rp.a, rp.b), acc[2 * i + 1]);
        }
        if (D & 1u) acc[D - 1] = fma_f(w, int4_dequant(int4_code(p, D - 1), rp.a, rp.b), acc[D - 1]);
      }
    } else if constexpr (K == RowKind::INT8) {
      for (std::uint32_t d = 0; d < D; ++d) acc[d] = fma_f(w, int8_dequant(p[d], rp.a, rp.b), acc[d]);
    } else if constexpr (kF16c) {
#if defined(__F16C__)
      const __m256 wv = _mm256_set1_ps(w);
      for (std::uint32_t i = 0; i < KD; i += 8)
        _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(wv, half8_to_float8(p + 2 * i), _mm256_loadu_ps(acc + i)));
#endif
    } else {
      for (std::uint32_t d = 0; d < D; ++d) acc[d] += w * row_value<K>(p, d, rp);
    }
  }
  void copy(std::int64_t r, float* __restrict out) const {
    const std::uint32_t D = KD ? KD : Dr;
    const std::uint8_t* __restrict p = row(r);
    if constexpr (K == RowKind::F32) {
      std::memcpy(out, p, D * sizeof(float));
    } else if constexpr (kF16c) {
#if defined(__F16C__)
      for (std::uint32_t i = 0; i < KD; i += 8) _mm256_storeu_ps(out + i, half8_to_float8(p + 2 * i));
#endif
    } else {
      const RowParams rp = params_of<K>(p, D, ts);
#if defined(__AVX2__)
      if constexpr (K == RowKind::INT4 && KD > 0 && KD % 16 == 0) {
        // As accumulate(): 8 bytes -> 16 values, then interleaved back to element order.
        for (std::uint32_t i = 0; i < KD / 2; i += 8) {
          __m256 ev, od;
          int4_decode16(p + i, rp, ev, od);
          const __m256 lo = _mm256_unpacklo_ps(ev, od), hi = _mm256_unpackhi_ps(ev, od);
          _mm256_storeu_ps(out + 2 * i, _mm256_permute2f128_ps(lo, hi, 0x20));
          _mm256_storeu_ps(out + 2 * i + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
        }
        return;
      }
#endif
      if constexpr (K == RowKind::INT4) {
        const std::uint32_t half = D / 2;
        for (std::uint32_t i = 0; i < half; ++i) {
          const std::uint32_t byte = p[i];
          out[2 * i] = int4_dequant(byte & 0xfu, rp.a, rp.b);
          out[2 * i + 1] = int4_dequant(byte >> 4, rp.a, rp.b);
        }
        if (D & 1u) out[D - 1] = row_value<K>(p, D - 1, rp);
      } else {
        for (std::uint32_t d = 0; d < D; ++d) out[d] = row_value<K>(p, d, rp);
      }
    }
  }
};

template <RowKind K>
void row_lookup(const RowView& v, const LookupArgs& g) {
  // Common embedding widths get their own code: the accumulator stays in vector registers and
  // the whole-group paths (fp16 through F16C, int4's 16-value decode) apply. fp16 bags of 16-wide
  // rows ran about 4x faster for it (edo bench --rows 20000 --dim 16); int8's slowness there was
  // the unsigned conversion (int8_rowwise.h), not the width.
  switch (v.dim) {
    case 16: return run_lookup(RowAcc<K, 16>(v, g), g);
    case 32: return run_lookup(RowAcc<K, 32>(v, g), g);
    case 64: return run_lookup(RowAcc<K, 64>(v, g), g);
    case 128: return run_lookup(RowAcc<K, 128>(v, g), g);
    default: return run_lookup(RowAcc<K>(v, g), g);
  }
}

// DS: sub-space width known at compile time (0: runtime v.dsub).
template <std::uint32_t DS>
struct PqAcc : DimFinish {
  PqView v;
  const std::int64_t* idx;
  std::uint32_t dsub() const { return DS ? DS : v.dsub; }
  void prefetch(std::int64_t pos) const { prefetch_bytes(v.codes + static_cast<std::uint64_t>(idx[pos]) * v.m, v.m); }
  void accumulate(std::int64_t r, float w, float* __restrict acc) const {
    const std::uint32_t ds = dsub();
    for (std::uint32_t s = 0; s < v.m; ++s) {
      const float* __restrict sub = pq_subvector(v, r, s);
      float* __restrict a = acc + s * ds;
      for (std::uint32_t j = 0; j < ds; ++j) a[j] += w * sub[j];
    }
  }
  void copy(std::int64_t r, float* __restrict out) const {
    const std::uint32_t ds = dsub();
    for (std::uint32_t s = 0; s < v.m; ++s) std::memcpy(out + s * ds, pq_subvector(v, r, s), ds * sizeof(float));
  }
};

void pq_lookup(const PqView& v, const LookupArgs& g) {
  switch (v.dsub) {
    case 2: return run_lookup(PqAcc<2>{{v.dim}, v, g.idx}, g);
    case 4: return run_lookup(PqAcc<4>{{v.dim}, v, g.idx}, g);
    case 8: return run_lookup(PqAcc<8>{{v.dim}, v, g.idx}, g);
    case 16: return run_lookup(PqAcc<16>{{v.dim}, v, g.idx}, g);
    default: return run_lookup(PqAcc<0>{{v.dim}, v, g.idx}, g);
  }
}

struct HashAcc : DimFinish {
  MultiHashView v;
  const std::int64_t* idx;
  void prefetch(std::int64_t pos) const {
    for (std::uint32_t i = 0; i < v.k; ++i)
      prefetch_bytes(v.table + multihash_bucket(v, idx[pos], i) * v.width, v.width * sizeof(float));
  }
  void accumulate(std::int64_t r, float w, float* __restrict acc) const {
    for (std::uint32_t i = 0; i < v.k; ++i) {
      const float* __restrict t = v.table + multihash_bucket(v, r, i) * v.width;
      float* __restrict a = v.mode == HashMode::Concat ? acc + i * v.width : acc;
      for (std::uint32_t j = 0; j < v.width; ++j) a[j] += w * t[j];
    }
  }
  void copy(std::int64_t r, float* __restrict out) const {
    std::fill(out, out + D, 0.f);
    accumulate(r, 1.f, out);
  }
};

void multihash_lookup(const MultiHashView& v, const LookupArgs& g) { run_lookup(HashAcc{{v.dim}, v, g.idx}, g); }

struct QrAcc : DimFinish {
  QrView v;
  const std::int64_t* idx;
  void prefetch(std::int64_t pos) const {
    const std::uint64_t r = static_cast<std::uint64_t>(idx[pos]);
    prefetch_bytes(v.q + (r / v.m) * v.dim, v.dim * sizeof(float));
    prefetch_bytes(v.r + (r % v.m) * v.dim, v.dim * sizeof(float));
  }
  void accumulate(std::int64_t row, float w, float* __restrict acc) const {
    const std::uint64_t r = static_cast<std::uint64_t>(row);
    const float* __restrict q = v.q + (r / v.m) * v.dim;
    const float* __restrict rr = v.r + (r % v.m) * v.dim;
    if (v.op == QrOp::Mult) {
      for (std::uint32_t d = 0; d < D; ++d) acc[d] += w * qr_combine(QrOp::Mult, q[d], rr[d]);
    } else {
      for (std::uint32_t d = 0; d < D; ++d) acc[d] += w * qr_combine(QrOp::Add, q[d], rr[d]);
    }
  }
  void copy(std::int64_t row, float* __restrict out) const {
    std::fill(out, out + D, 0.f);
    accumulate(row, 1.f, out);
  }
};

void qr_lookup(const QrView& v, const LookupArgs& g) { run_lookup(QrAcc{{v.dim}, v, g.idx}, g); }

// Low rank: pool the rank-r rows of A, multiply by B once per bag.
struct LowRankAcc {
  static constexpr std::uint32_t kWidth = 0;
  LowRankView v;
  const std::int64_t* idx;
  std::uint32_t acc_width() const { return v.rank; }
  void prefetch(std::int64_t pos) const { prefetch_bytes(v.a + static_cast<std::uint64_t>(idx[pos]) * v.rank, v.rank * 4); }
  void accumulate(std::int64_t r, float w, float* __restrict acc) const {
    const float* __restrict a = v.a + static_cast<std::uint64_t>(r) * v.rank;
    for (std::uint32_t k = 0; k < v.rank; ++k) acc[k] += w * a[k];
  }
  // out[d] = sum_k a[k] B[k,d], accumulated in k order with fma (as lowrank_value).
  void product(const float* __restrict a, float scale, float* __restrict out) const {
    const std::uint32_t D = v.dim;
    std::fill(out, out + D, 0.f);
    for (std::uint32_t k = 0; k < v.rank; ++k) {
      const float ak = a[k] * scale;
      const float* __restrict b = v.b + static_cast<std::uint64_t>(k) * D;
      for (std::uint32_t d = 0; d < D; ++d) out[d] = fma_f(ak, b[d], out[d]);
    }
  }
  void finish(const float* acc, float scale, float* out) const { product(acc, scale, out); }
  void copy(std::int64_t r, float* out) const { product(v.a + static_cast<std::uint64_t>(r) * v.rank, 1.f, out); }
};

void lowrank_lookup(const LowRankView& v, const LookupArgs& g) { run_lookup(LowRankAcc{v, g.idx}, g); }

// Remapped rows (pruned, offload): prefetch the remap entry twice as far ahead as the row.
template <class View, const float* (*RowOf)(const View&, std::int64_t)>
struct RemapAcc : DimFinish {
  View v;
  const std::int64_t* idx;
  std::int64_t n;
  int pf;
  void prefetch(std::int64_t pos) const {
    if (pos + pf < n) __builtin_prefetch(slot_of(idx[pos + pf]));
    prefetch_bytes(RowOf(v, idx[pos]), D * sizeof(float));
  }
  const std::int32_t* slot_of(std::int64_t r) const;
  void accumulate(std::int64_t r, float w, float* __restrict acc) const {
    const float* __restrict p = RowOf(v, r);
    for (std::uint32_t d = 0; d < D; ++d) acc[d] += w * p[d];
  }
  void copy(std::int64_t r, float* __restrict out) const { std::memcpy(out, RowOf(v, r), D * sizeof(float)); }
};

template <>
const std::int32_t* RemapAcc<PrunedView, pruned_row>::slot_of(std::int64_t r) const { return v.remap + r; }
template <>
const std::int32_t* RemapAcc<OffloadView, offload_row>::slot_of(std::int64_t r) const { return v.slot + r; }

void pruned_lookup(const PrunedView& v, const LookupArgs& g) {
  run_lookup(RemapAcc<PrunedView, pruned_row>{{v.dim}, v, g.idx, g.n, g.prefetch}, g);
}
void offload_lookup(const OffloadView& v, const LookupArgs& g) {
  run_lookup(RemapAcc<OffloadView, offload_row>{{v.dim}, v, g.idx, g.n, g.prefetch}, g);
}

// Dense decodes (the reference path): the formats' own functions, element by element.
template <RowKind K>
void row_decode(const RowView& v, std::uint64_t first, std::uint64_t count, float* out) {
  const std::uint32_t D = v.dim;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint8_t* p = v.base + (first + i) * v.row_bytes;
    const RowParams rp = row_params<K>(p, D, v.table_scale);
    float* __restrict o = out + i * D;
    for (std::uint32_t d = 0; d < D; ++d) o[d] = row_value<K>(p, d, rp);
  }
}

void lowrank_decode(const LowRankView& v, std::uint64_t first, std::uint64_t count, float* out) {
  const std::uint32_t D = v.dim;
  for (std::uint64_t i = 0; i < count; ++i) {
    float* __restrict o = out + i * D;
    const float* __restrict a = v.a + (first + i) * v.rank;
    // lowrank_value() per element, loop-interchanged (k outer) so that it vectorises; the
    // same fma chain in the same k order, hence the same bits.
    for (std::uint32_t d = 0; d < D; ++d) o[d] = 0.f;
    for (std::uint32_t k = 0; k < v.rank; ++k) {
      const float* __restrict b = v.b + static_cast<std::uint64_t>(k) * D;
      for (std::uint32_t d = 0; d < D; ++d) o[d] = fma_f(a[k], b[d], o[d]);
    }
  }
}

std::uint64_t max_index(const std::int64_t* idx, std::int64_t n, int threads) {
  std::uint64_t m = 0;
  if (n < (1 << 20)) {
    for (std::int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<std::uint64_t>(idx[i]));
    return m;
  }
#pragma omp parallel for num_threads(std::max(1, threads)) reduction(max : m) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<std::uint64_t>(idx[i]));
  return m;
}

void pq_assign(const float* x, std::int64_t n, std::uint64_t stride, std::uint32_t dsub, std::uint32_t k,
               const float* ct, std::uint8_t* codes, std::uint64_t code_stride, int threads) {
#pragma omp parallel num_threads(n < 2048 ? 1 : std::max(1, threads))
  {
    alignas(64) float dist[kPqCentroids];
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float* xi = x + static_cast<std::uint64_t>(i) * stride;
      for (std::uint32_t c = 0; c < kPqCentroids; ++c) dist[c] = 0.f;
      for (std::uint32_t j = 0; j < dsub; ++j) {
        const float xj = xi[j];
        const float* __restrict cj = ct + static_cast<std::uint64_t>(j) * kPqCentroids;
        for (std::uint32_t c = 0; c < kPqCentroids; ++c) {
          const float diff = xj - cj[c];
          dist[c] += diff * diff;
        }
      }
      std::uint32_t best = 0;
      float bd = dist[0];
      for (std::uint32_t c = 1; c < k; ++c)
        if (dist[c] < bd) { bd = dist[c]; best = c; }
      codes[static_cast<std::uint64_t>(i) * code_stride] = static_cast<std::uint8_t>(best);
    }
  }
}

}  // namespace

const KernelTable& kernel_table() {
  static const KernelTable t{
      EDO_ISA_NAME,
      {&row_lookup<RowKind::F32>, &row_lookup<RowKind::F16>, &row_lookup<RowKind::BF16>, &row_lookup<RowKind::FP8>,
       &row_lookup<RowKind::INT8>, &row_lookup<RowKind::INT4>},
      &pq_lookup,
      &multihash_lookup,
      &qr_lookup,
      &lowrank_lookup,
      &pruned_lookup,
      &offload_lookup,
      &max_index,
      {&row_decode<RowKind::F32>, &row_decode<RowKind::F16>, &row_decode<RowKind::BF16>, &row_decode<RowKind::FP8>,
       &row_decode<RowKind::INT8>, &row_decode<RowKind::INT4>},
      &lowrank_decode,
      &pq_assign,
  };
  return t;
}

}  // namespace edo::kernels::cpu::EDO_ISA_NS
