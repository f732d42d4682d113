// The CUDA driver entry points the tracer uses, resolved with dlopen("libcuda.so.1") + dlsym:
// libedo_trace.so never links CUDA, and never calls the job's CUDA runtime.
#pragma once

#include <cuda.h>

namespace edo::capture {

struct Driver {
  bool loaded = false;
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned) = nullptr;
  CUresult (*cuMemFreeHost)(void*) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuCtxPushCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxPopCurrent)(CUcontext*) = nullptr;
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*cuFuncGetParamInfo)(CUfunction, size_t, size_t*, size_t*) = nullptr;
  CUresult (*cuKernelGetParamInfo)(CUkernel, size_t, size_t*, size_t*) = nullptr;
};

// Loads libcuda.so.1 once; nullptr when it is missing or lacks what the tracer needs.
const Driver* load_driver();
// The driver if load_driver() succeeded before, else nullptr (never loads).
const Driver* loaded_driver();

}  // namespace edo::capture
