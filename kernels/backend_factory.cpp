// make_backend(): the one place that knows every backend (edo_kernels links them all).
#include <stdexcept>

#include "edo/kernels/backend.h"
#include "edo/kernels/cpu.h"
#include "edo/kernels/cuda.h"

namespace edo::kernels {

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "cpu") return cpu::make_cpu_backend();
  if (name == "cuda") return cuda::make_cuda_backend();
  throw std::invalid_argument("unknown backend '" + name + "' (known: cpu, cuda)");
}

}  // namespace edo::kernels
