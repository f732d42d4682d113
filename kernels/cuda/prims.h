// Internal to edo_kernels_cuda: the memory primitives of the kernels written for the device and
// the host (row_chunks.h, element_rows.h, offload_rows.h): a vector load or store on the device,
// its plain definition on the host, where the unit tests run kernel bodies thread by thread.
#pragma once

#include <cstdint>
#if !defined(__CUDA_ARCH__)
#include <cstring>
#endif

#include "edo/kernels/formats/common.h"

// Unrolling is for nvcc; the host compilers would warn about the pragma.
#if defined(__CUDACC__)
#define EDO_UNROLL _Pragma("unroll")
#else
#define EDO_UNROLL
#endif

namespace edo::kernels::cuda::detail {

// One 16-byte chunk of a row as four little-endian words.
struct Chunk16 {
  std::uint32_t x, y, z, w;
};

EDO_HD Chunk16 load16(const std::uint8_t* p) {  // p is 16-byte aligned
#if defined(__CUDA_ARCH__)
  const uint4 q = __ldg(reinterpret_cast<const uint4*>(p));
  return {q.x, q.y, q.z, q.w};
#else
  Chunk16 c;
  std::memcpy(&c, p, sizeof c);
  return c;
#endif
}
EDO_HD std::uint32_t ldg_u32(const std::uint8_t* p) {  // 4-byte aligned
#if defined(__CUDA_ARCH__)
  return __ldg(reinterpret_cast<const unsigned int*>(p));
#else
  std::uint32_t u;
  std::memcpy(&u, p, 4);
  return u;
#endif
}
EDO_HD float ldg_f32(const std::uint8_t* p) { return bits_as_float(ldg_u32(p)); }
EDO_HD void ldg_f32x2(const std::uint8_t* p, float& a, float& b) {  // 8-byte aligned
#if defined(__CUDA_ARCH__)
  const float2 v = __ldg(reinterpret_cast<const float2*>(p));
  a = v.x;
  b = v.y;
#else
  a = ldg_f32(p);
  b = ldg_f32(p + 4);
#endif
}
EDO_HD void store4(float* o, float a, float b, float c, float d) {  // 16-byte aligned
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<float4*>(o) = make_float4(a, b, c, d);
#else
  o[0] = a, o[1] = b, o[2] = c, o[3] = d;
#endif
}

// Four floats (a float4 in registers on the device).
struct Float4 {
  float x, y, z, w;
};

// Read-only (non-coherent) 16-byte load of device memory the kernel does not write.
EDO_HD Float4 ldg4(const float* p) {  // 16-byte aligned
#if defined(__CUDA_ARCH__)
  const float4 v = __ldg(reinterpret_cast<const float4*>(p));
  return {v.x, v.y, v.z, v.w};
#else
  Float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
#endif
}
// Plain 16-byte load: shared memory, or host memory the device reads over the link.
EDO_HD Float4 ld4(const float* p) {  // 16-byte aligned
#if defined(__CUDA_ARCH__)
  const float4 v = *reinterpret_cast<const float4*>(p);
  return {v.x, v.y, v.z, v.w};
#else
  Float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
#endif
}
EDO_HD float ldg(const float* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}
template <class T>
EDO_HD T ldg_t(const T* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}

EDO_HD void fma4(float w, const Float4& x, Float4& acc) {
  acc.x = fma_f(w, x.x, acc.x);
  acc.y = fma_f(w, x.y, acc.y);
  acc.z = fma_f(w, x.z, acc.z);
  acc.w = fma_f(w, x.w, acc.w);
}

}  // namespace edo::kernels::cuda::detail
