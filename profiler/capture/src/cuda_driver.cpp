#include "cuda_driver.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

namespace edo::capture {
namespace {

Driver drv;
std::once_flag drv_once;
std::atomic<const Driver*> drv_ready{nullptr};

template <class T>
void sym(void* h, T& f, const char* name) {
  f = reinterpret_cast<T>(dlsym(h, name));
}

thread_local int internal_depth = 0;

}  // namespace

InternalCall::InternalCall() {
  if (internal_depth++ > 0) return;  // the outermost scope switches the mode
  const Driver* d = drv_ready.load(std::memory_order_acquire);
  if (d && d->cuThreadExchangeStreamCaptureMode) {
    saved_ = CU_STREAM_CAPTURE_MODE_RELAXED;
    relaxed_ = d->cuThreadExchangeStreamCaptureMode(&saved_) == CUDA_SUCCESS;
  }
}
InternalCall::~InternalCall() {
  --internal_depth;
  if (relaxed_) drv_ready.load(std::memory_order_acquire)->cuThreadExchangeStreamCaptureMode(&saved_);
}
bool in_internal_call() { return internal_depth > 0; }

ScopedContext::ScopedContext(const Driver& drv, CUcontext ctx) : d_(drv) {
  CUcontext cur = nullptr;
  if (d_.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == ctx && ctx) {
    ok_ = true;
    return;
  }
  pushed_ = ok_ = ctx && d_.cuCtxPushCurrent(ctx) == CUDA_SUCCESS;
}
ScopedContext::~ScopedContext() {
  if (!pushed_) return;
  CUcontext popped = nullptr;
  d_.cuCtxPopCurrent(&popped);
}

Capture capture_status(const Driver& drv, CUstream stream, uint64_t* id) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t cid = 0;
  CUresult r = CUDA_ERROR_NOT_SUPPORTED;
  if (!drv.cuStreamGetCaptureInfo && !drv.cuStreamIsCapturing) return Capture::kNone;  // a driver before graphs
  if (drv.cuStreamGetCaptureInfo) r = drv.cuStreamGetCaptureInfo(stream, &st, &cid, nullptr, nullptr, nullptr, nullptr);
  else if (drv.cuStreamIsCapturing) r = drv.cuStreamIsCapturing(stream, &st);
  if (id) *id = cid;
  if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) return Capture::kImplicit;
  if (r != CUDA_SUCCESS) return Capture::kUnknown;
  return st == CU_STREAM_CAPTURE_STATUS_ACTIVE        ? Capture::kActive
         : st == CU_STREAM_CAPTURE_STATUS_INVALIDATED ? Capture::kInvalidated
                                                      : Capture::kNone;
}

const Driver* load_driver() {
  std::call_once(drv_once, [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    sym(h, drv.cuMemHostAlloc, "cuMemHostAlloc");
    sym(h, drv.cuMemFreeHost, "cuMemFreeHost");
    sym(h, drv.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    sym(h, drv.cuEventCreate, "cuEventCreate");
    sym(h, drv.cuEventRecord, "cuEventRecord");
    sym(h, drv.cuEventQuery, "cuEventQuery");
    sym(h, drv.cuEventDestroy, "cuEventDestroy_v2");
    sym(h, drv.cuCtxGetCurrent, "cuCtxGetCurrent");
    sym(h, drv.cuCtxPushCurrent, "cuCtxPushCurrent_v2");
    sym(h, drv.cuCtxPopCurrent, "cuCtxPopCurrent_v2");
    sym(h, drv.cuStreamGetCtx, "cuStreamGetCtx");
    sym(h, drv.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    sym(h, drv.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    sym(h, drv.cuDevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState");
    sym(h, drv.cuStreamIsCapturing, "cuStreamIsCapturing");
    sym(h, drv.cuStreamGetCaptureInfo, "cuStreamGetCaptureInfo_v3");
    sym(h, drv.cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode");
#if CUDA_VERSION >= 12040
    sym(h, drv.cuFuncGetParamInfo, "cuFuncGetParamInfo");  // guarded: older drivers lack them
    sym(h, drv.cuKernelGetParamInfo, "cuKernelGetParamInfo");
#endif
    sym(h, drv.cuFuncGetName, "cuFuncGetName");
    sym(h, drv.cuKernelGetName, "cuKernelGetName");
    sym(h, drv.cuModuleLoadData, "cuModuleLoadData");
    sym(h, drv.cuModuleGetFunction, "cuModuleGetFunction");
    sym(h, drv.cuLaunchKernel, "cuLaunchKernel");
    sym(h, drv.cuStreamCreate, "cuStreamCreate");
    sym(h, drv.cuStreamDestroy, "cuStreamDestroy_v2");
    sym(h, drv.cuStreamWaitEvent, "cuStreamWaitEvent");
    sym(h, drv.cuStreamSynchronize, "cuStreamSynchronize");
    sym(h, drv.cuMemAlloc, "cuMemAlloc_v2");
    sym(h, drv.cuMemFree, "cuMemFree_v2");
    sym(h, drv.cuMemsetD32Async, "cuMemsetD32Async");
    sym(h, drv.cuCtxGetDevice, "cuCtxGetDevice");
    sym(h, drv.cuDeviceGetName, "cuDeviceGetName");
    sym(h, drv.cuDeviceGetAttribute, "cuDeviceGetAttribute");
    sym(h, drv.cuMemGetAddressRange, "cuMemGetAddressRange_v2");
    drv.loaded = drv.cuMemHostAlloc && drv.cuMemcpyDtoHAsync && drv.cuEventCreate && drv.cuEventRecord &&
                 drv.cuEventQuery && drv.cuCtxGetCurrent && drv.cuCtxPushCurrent && drv.cuCtxPopCurrent;
    if (drv.loaded) drv_ready.store(&drv, std::memory_order_release);
  });
  return drv_ready.load(std::memory_order_acquire);
}

const Driver* loaded_driver() { return drv_ready.load(std::memory_order_acquire); }

}  // namespace edo::capture
