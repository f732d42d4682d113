#include "cuda_driver.h"
#include "dl_symbol.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

namespace edo::capture {
namespace {

Driver drv;
std::once_flag drv_once;
std::atomic<const Driver*> drv_ready{nullptr};

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
    load_symbol(h, drv.cuMemHostAlloc, "cuMemHostAlloc");
    load_symbol(h, drv.cuMemFreeHost, "cuMemFreeHost");
    load_symbol(h, drv.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    load_symbol(h, drv.cuEventCreate, "cuEventCreate");
    load_symbol(h, drv.cuEventRecord, "cuEventRecord");
    load_symbol(h, drv.cuEventQuery, "cuEventQuery");
    load_symbol(h, drv.cuEventDestroy, "cuEventDestroy_v2");
    load_symbol(h, drv.cuCtxGetCurrent, "cuCtxGetCurrent");
    load_symbol(h, drv.cuCtxPushCurrent, "cuCtxPushCurrent_v2");
    load_symbol(h, drv.cuCtxPopCurrent, "cuCtxPopCurrent_v2");
    load_symbol(h, drv.cuStreamGetCtx, "cuStreamGetCtx");
    load_symbol(h, drv.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    load_symbol(h, drv.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    load_symbol(h, drv.cuDevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState");
    load_symbol(h, drv.cuStreamIsCapturing, "cuStreamIsCapturing");
    load_symbol(h, drv.cuStreamGetCaptureInfo, "cuStreamGetCaptureInfo_v3");
    load_symbol(h, drv.cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode");
#if CUDA_VERSION >= 12040
    load_symbol(h, drv.cuFuncGetParamInfo, "cuFuncGetParamInfo");  // guarded: older drivers lack them
    load_symbol(h, drv.cuKernelGetParamInfo, "cuKernelGetParamInfo");
#endif
    load_symbol(h, drv.cuFuncGetName, "cuFuncGetName");
    load_symbol(h, drv.cuKernelGetName, "cuKernelGetName");
    load_symbol(h, drv.cuModuleLoadData, "cuModuleLoadData");
    load_symbol(h, drv.cuModuleGetFunction, "cuModuleGetFunction");
    load_symbol(h, drv.cuLaunchKernel, "cuLaunchKernel");
    load_symbol(h, drv.cuStreamCreate, "cuStreamCreate");
    load_symbol(h, drv.cuStreamDestroy, "cuStreamDestroy_v2");
    load_symbol(h, drv.cuStreamWaitEvent, "cuStreamWaitEvent");
    load_symbol(h, drv.cuStreamSynchronize, "cuStreamSynchronize");
    load_symbol(h, drv.cuMemAlloc, "cuMemAlloc_v2");
    load_symbol(h, drv.cuMemFree, "cuMemFree_v2");
    load_symbol(h, drv.cuMemsetD32Async, "cuMemsetD32Async");
    load_symbol(h, drv.cuCtxGetDevice, "cuCtxGetDevice");
    load_symbol(h, drv.cuDeviceGetName, "cuDeviceGetName");
    load_symbol(h, drv.cuDeviceGetAttribute, "cuDeviceGetAttribute");
    load_symbol(h, drv.cuMemGetAddressRange, "cuMemGetAddressRange_v2");
    drv.loaded = drv.cuMemHostAlloc && drv.cuMemcpyDtoHAsync && drv.cuEventCreate && drv.cuEventRecord &&
                 drv.cuEventQuery && drv.cuCtxGetCurrent && drv.cuCtxPushCurrent && drv.cuCtxPopCurrent;
    if (drv.loaded) drv_ready.store(&drv, std::memory_order_release);
  });
  return drv_ready.load(std::memory_order_acquire);
}

const Driver* loaded_driver() { return drv_ready.load(std::memory_order_acquire); }

}  // namespace edo::capture
