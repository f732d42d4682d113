// Shared definitions for every row format: the EDO_HD macro and small helpers.
//
// The per-element math of each format (dequantise, hash, PQ decode, low-rank product...)
// is written once, as inline functions marked EDO_HD, in kernels/include/edo/kernels/formats/*.h. Both the CPU
// backend (kernels/cpu) and the CUDA backend (kernels/cuda) call these functions, so the two
// backends cannot disagree about a format. Without nvcc EDO_HD expands to nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define EDO_HD __host__ __device__ __forceinline__
#else
#define EDO_HD inline __attribute__((always_inline))
#endif

namespace edo::kernels {

// Rows of quantised formats are padded to this many bytes so that a row starts on a 16-byte
// boundary (one 128-bit vector load on the GPU, aligned SIMD loads on the CPU).
inline constexpr std::size_t kRowAlign = 16;

EDO_HD constexpr std::uint64_t round_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

EDO_HD std::uint32_t float_as_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return __builtin_bit_cast(std::uint32_t, f);
#endif
}
EDO_HD float bits_as_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return __builtin_bit_cast(float, u);
#endif
}

// Loads of row metadata that may sit at an unaligned offset (int8/fp8 scale after D codes,
// int4's fp16 scale after ceil(D/2) bytes). Aligned in the common case (D % 4 == 0).
EDO_HD float load_f32(const std::uint8_t* p) {
#if defined(__CUDA_ARCH__)
  if ((reinterpret_cast<std::uintptr_t>(p) & 3u) == 0) return *reinterpret_cast<const float*>(p);
#endif
  const std::uint32_t u = static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
                          static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
  return bits_as_float(u);
}
EDO_HD std::uint16_t load_u16(const std::uint8_t* p) {
#if defined(__CUDA_ARCH__)
  if ((reinterpret_cast<std::uintptr_t>(p) & 1u) == 0) return *reinterpret_cast<const std::uint16_t*>(p);
#endif
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}

// a*b+c with one rounding, everywhere: the GPU's fma, the FMA instruction in the CPU
// backend's AVX2/AVX-512 builds, and libm's correctly rounded fmaf() in code compiled without
// FMA (the baseline instruction set, which only CPUs older than AVX2 run). Every backend then
// dequantises bit for bit alike, and the fp64 reference sums exactly the values they add.
EDO_HD float fma_f(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return __builtin_fmaf(a, b, c);
#endif
}

// splitmix64's finaliser: multi-hash buckets, offload's cache sets.
EDO_HD std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// floor(x * n / 2^64): maps a 64-bit hash onto [0, n) without a division.
EDO_HD std::uint64_t mul_high(std::uint64_t x, std::uint64_t n) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(x, n);
#else
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(x) * n) >> 64);
#endif
}

// How a bag is pooled.
enum class Pooling : int { Sum = 0, Mean = 1 };

}  // namespace edo::kernels
