// Reading a CUPTI API callback's record (CUpti_CallbackData, cupti_callbacks.h): its parameter
// struct and whether the call succeeded. Shared by the translator's launch and memory readers.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <cstdint>

namespace edo::capture {

// The call's parameters as the generated struct of its callback id (e.g.
// cudaMalloc_v3020_params from generated_cuda_runtime_api_meta.h).
template <class T>
const T* params(const CUpti_CallbackData* cb) {
  return static_cast<const T*>(cb->functionParams);
}

// At API exit: the call returned cudaSuccess / CUDA_SUCCESS (no return value known: assumed so).
inline bool runtime_ok(const CUpti_CallbackData* cb) {
  return !cb->functionReturnValue || *static_cast<const int*>(cb->functionReturnValue) == 0;  // cudaSuccess
}
inline bool driver_ok(const CUpti_CallbackData* cb) {
  return !cb->functionReturnValue || *static_cast<const CUresult*>(cb->functionReturnValue) == CUDA_SUCCESS;
}

inline uint64_t as_u64(const void* p) { return reinterpret_cast<uint64_t>(p); }

}  // namespace edo::capture
