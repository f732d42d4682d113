#include "cpu/cpu_kernels.h"
#include "edo/kernels/cpu.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace edo::kernels::cpu {
#if defined(__x86_64__)
namespace avx512 { const KernelTable& kernel_table(); }
namespace avx2 { const KernelTable& kernel_table(); }
#endif
namespace generic { const KernelTable& kernel_table(); }

namespace {
#if defined(__x86_64__)
// F16C (CPUID leaf 1, ECX bit 29): asked through cpuid because clang 14 (Debian 12's, which
// builds the fuzz targets) does not know __builtin_cpu_supports("f16c").
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

const KernelTable& pick() {
  std::string want;
  if (const char* e = std::getenv("EDO_CPU_ISA")) want = e;
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool has512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  const bool has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
  if (has512 && (want.empty() || want == "avx512")) return avx512::kernel_table();
  if (has2 && (want.empty() || want == "avx512" || want == "avx2")) return avx2::kernel_table();
#endif
  return generic::kernel_table();
}
}  // namespace

const KernelTable* kernels_named(const char* isa) {
  const std::string w = isa;
  if (w == "generic") return &generic::kernel_table();
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (w == "avx2" && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c())
    return &avx2::kernel_table();
  if (w == "avx512" && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return &avx512::kernel_table();
#endif
  return nullptr;
}

namespace {
std::atomic<const KernelTable*> g_override{nullptr};
}
void override_kernels(const KernelTable* t) { g_override = t; }

std::string isa() { return kernels().isa; }

const KernelTable& kernels() {
  if (const KernelTable* o = g_override.load(std::memory_order_relaxed)) return *o;
  static const KernelTable& t = pick();
  return t;
}

}  // namespace edo::kernels::cpu
