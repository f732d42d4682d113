// The CUDA driver entry points the tracer uses, resolved with dlopen("libcuda.so.1") + dlsym:
// libedo_trace.so never links CUDA, and never calls the job's CUDA runtime. This is the only
// driver table of the library (device counting, staging, weight snapshots, CUPTI glue all use
// it): one dlopen, one set of symbol versions.
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
  // The context a stream belongs to (cuda.h:15134-15147: a created stream's is the one current
  // when it was created; the special streams' is the calling thread's current one).
  CUresult (*cuStreamGetCtx)(CUstream, CUcontext*) = nullptr;
  // Kept retained while edo holds handles in a primary context (cuda.h:5851-5856: it stays
  // active until the last retainer releases it).
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxGetState)(CUdevice, unsigned*, int*) = nullptr;
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  // cuStreamGetCaptureInfo_v3 (cuda.h:15610, exported as _v3 since CUDA 12.3): the capture's id.
  CUresult (*cuStreamGetCaptureInfo)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*, const CUgraphNode**,
                                     const CUgraphEdgeData**, size_t*) = nullptr;
  CUresult (*cuThreadExchangeStreamCaptureMode)(CUstreamCaptureMode*) = nullptr;
  CUresult (*cuFuncGetParamInfo)(CUfunction, size_t, size_t*, size_t*) = nullptr;
  CUresult (*cuKernelGetParamInfo)(CUkernel, size_t, size_t*, size_t*) = nullptr;
  CUresult (*cuFuncGetName)(const char**, CUfunction) = nullptr;
  CUresult (*cuKernelGetName)(const char**, CUkernel) = nullptr;
  // Counting device indices on the device (device_counting.cpp); all optional.
  CUresult (*cuModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**) = nullptr;
  CUresult (*cuStreamCreate)(CUstream*, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream) = nullptr;
  CUresult (*cuCtxGetDevice)(CUdevice*) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;  // the recording names its GPU (cuda.h:5349)
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*cuMemGetAddressRange)(CUdeviceptr*, size_t*, CUdeviceptr) = nullptr;

  // Weight snapshots read from device memory (weights_cuda.cpp).
  bool can_read_weights() const {
    return cuStreamCreate && cuStreamDestroy && cuStreamSynchronize && cuStreamWaitEvent && cuEventCreate &&
           cuEventRecord && cuEventDestroy && cuMemHostAlloc && cuMemFreeHost && cuMemcpyDtoHAsync;
  }
  bool can_count_on_device() const {
    return cuModuleLoadData && cuModuleGetFunction && cuLaunchKernel && cuStreamCreate && cuStreamWaitEvent &&
           cuStreamSynchronize && cuMemAlloc && cuMemFree && cuMemsetD32Async && cuMemcpyDtoHAsync && cuEventCreate &&
           cuEventRecord && cuEventQuery && cuMemHostAlloc;
  }
};

// The tracer's own driver calls (device counting: allocations, launches, copies, event
// queries) are wrapped in an InternalCall: the CUPTI callbacks they trigger are not the job's
// and are ignored, and the calling thread (the job's or edo's own) is in
// CU_STREAM_CAPTURE_MODE_RELAXED for the scope (cuThreadExchangeStreamCaptureMode,
// cuda.h:15454-15465): in the default GLOBAL mode an event query, a synchronisation or an
// allocation while any thread captures a CUDA graph in GLOBAL mode (torch.cuda.graph's default)
// invalidates that capture (PyTorch's NCCL watchdog had this bug: pytorch#104555, #105182).
class InternalCall {
 public:
  InternalCall();
  ~InternalCall();
  InternalCall(const InternalCall&) = delete;
  InternalCall& operator=(const InternalCall&) = delete;

 private:
  bool relaxed_ = false;
  CUstreamCaptureMode saved_ = CU_STREAM_CAPTURE_MODE_GLOBAL;
};
bool in_internal_call();

// Whether work on `stream` would go into a CUDA graph capture: CU_STREAM_CAPTURE_STATUS_ACTIVE
// or _INVALIDATED, or CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (the legacy stream while a blocking
// stream captures, cuda.h:15525-15528). `id`: the capture's id when the driver tells it.
// Makes `ctx` current on the calling thread for the scope, when it is not already. A push that
// failed is never popped: the pop would take the caller's own context off its stack.
class ScopedContext {
 public:
  ScopedContext(const Driver& drv, CUcontext ctx);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  bool ok() const { return ok_; }  // `ctx` is current

 private:
  const Driver& d_;
  bool pushed_ = false, ok_ = false;
};

enum class Capture : uint8_t { kNone, kActive, kInvalidated, kImplicit, kUnknown };
Capture capture_status(const Driver& drv, CUstream stream, uint64_t* id = nullptr);

// Loads libcuda.so.1 once; nullptr when it is missing or lacks what the tracer needs.
const Driver* load_driver();
// The driver if load_driver() succeeded before, else nullptr (never loads).
const Driver* loaded_driver();

}  // namespace edo::capture
