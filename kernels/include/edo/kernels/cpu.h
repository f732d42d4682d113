// The CPU backend's own controls (edo_kernels_cpu). Lookups run through EncodedTable::gather
// and ::bag (edo/kernels/strategy.h) or a Backend (edo/kernels/backend.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "edo/kernels/backend.h"

namespace edo::kernels::cpu {

// The CPU backend (make_backend("cpu") returns one).
std::unique_ptr<Backend> make_cpu_backend();

// Pin the backend's threads to distinct CPUs of this process's affinity mask.
void pin_threads();
// The CPUs this process could use when first asked, in increasing order.
const std::vector<int>& allowed_cpus();
// The instruction set of the lookup kernels in use: "avx512", "avx2" or "generic"
// (EDO_CPU_ISA=avx2|generic lowers it).
std::string isa();

}  // namespace edo::kernels::cpu
