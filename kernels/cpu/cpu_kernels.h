// The CPU backend's hot loops, compiled three times (AVX-512, AVX2+FMA+F16C, baseline x86-64)
// from cpu_kernels_isa.cpp and picked at run time from what the CPU supports (no
// -march=native: the binaries run on other machines). EDO_CPU_ISA=avx512|avx2|generic
// overrides the choice (it can only lower it).
#pragma once

#include <cstdint>

#include "edo/kernels/formats/common.h"
#include "edo/kernels/formats/lowrank.h"
#include "edo/kernels/formats/multihash.h"
#include "edo/kernels/formats/offload.h"
#include "edo/kernels/formats/pq.h"
#include "edo/kernels/formats/pruned.h"
#include "edo/kernels/formats/qr.h"
#include "edo/kernels/formats/row_formats.h"

namespace edo::kernels::cpu {

struct LookupArgs {
  const std::int64_t* idx;
  std::int64_t n;
  const std::int64_t* offsets;  // nullptr: gather
  std::int64_t n_bags;
  const float* psw;
  Pooling mode;
  float* out;
  std::uint32_t dim;
  int threads;
  int prefetch;  // rows ahead
};

struct KernelTable {
  const char* isa;
  void (*row_lookup[6])(const RowView&, const LookupArgs&);  // indexed by RowKind
  void (*pq_lookup)(const PqView&, const LookupArgs&);
  void (*multihash_lookup)(const MultiHashView&, const LookupArgs&);
  void (*qr_lookup)(const QrView&, const LookupArgs&);
  void (*lowrank_lookup)(const LowRankView&, const LookupArgs&);
  void (*pruned_lookup)(const PrunedView&, const LookupArgs&);
  void (*offload_lookup)(const OffloadView&, const LookupArgs&);
  // Largest index as unsigned (negative ids become huge), for the range check.
  std::uint64_t (*max_index)(const std::int64_t* idx, std::int64_t n, int threads);
  // PQ: nearest of k (<= 256) centroids for each of n vectors (stride `stride` floats) in one
  // sub-space whose centroids are stored transposed (dsub x 256, first k used).
  // Writes codes[i*code_stride].
  // Dense decode of rows [first, first + count) to fp32 (decode_rows(): the reference every
  // backend is checked against), in this instruction set so that fma is one instruction.
  void (*row_decode[6])(const RowView&, std::uint64_t first, std::uint64_t count, float* out);
  void (*lowrank_decode)(const LowRankView&, std::uint64_t first, std::uint64_t count, float* out);
  void (*pq_assign)(const float* x, std::int64_t n, std::uint64_t stride, std::uint32_t dsub, std::uint32_t k,
                    const float* ct, std::uint8_t* codes, std::uint64_t code_stride, int threads);
};

const KernelTable& kernels();
// A specific build ("avx512", "avx2", "generic") if this CPU can run it, else nullptr (tests).
const KernelTable* kernels_named(const char* isa);
// Make kernels() return `t` (nullptr: back to the automatic choice). For tests.
void override_kernels(const KernelTable* t);

}  // namespace edo::kernels::cpu
