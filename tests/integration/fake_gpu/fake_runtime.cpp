// Fake libcudart.so.13 (see fake_cuda.h): the runtime entry points a job calls. Like the real
// runtime it keeps a per-thread last error (cudaGetLastError), reports its calls to the CUPTI
// subscriber and launches without driver callbacks (as the real runtime does). Runtime calls
// made while a tool callback runs are counted: the real runtime fails cudaGetFuncBySymbol there
// and leaves "invalid device function" as the job's last error (issue 9), which the fake
// reproduces.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

#include "fake_cuda.h"

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

thread_local cudaError_t last_error = cudaSuccess;
std::atomic<uint64_t> calls_in_callbacks{0};
std::mutex mu;
std::map<const void*, fake_kernel*> host_fns;  // host-side entry function -> kernel

// Every entry point starts here. The runtime initialises the driver lazily, at the job's first
// CUDA call (that is when CUDA_VISIBLE_DEVICES is read).
void entered() {
  if (fake_cuda_in_callback()) calls_in_callbacks.fetch_add(1);
  static std::once_flag init;
  std::call_once(init, [] { cuInit(0); });
}

cudaError_t fail(cudaError_t e) {
  if (e != cudaSuccess) last_error = e;
  return e;
}

cudaError_t of(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
    // The stream-capture errors have the same numbers in both APIs (cuda.h:3074-3123,
    // driver_types.h:1016-1065).
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    case CUDA_ERROR_STREAM_CAPTURE_MERGE: case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED:
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED: case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: case CUDA_ERROR_CAPTURED_EVENT:
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
      return static_cast<cudaError_t>(int(r));
    default: return cudaErrorInvalidValue;
  }
}

// One runtime call: ENTER callback, the work (driver calls made in it carry this call's
// correlation id in their activity records), EXIT callback, last error.
template <class Params, class Work>
cudaError_t runtime_call(CUpti_CallbackId cbid, const char* name, Params& p, const char* symbol, Work work) {
  const uint32_t corr = fake_cuda_next_correlation();
  cudaError_t r = cudaSuccess;
  fake_cuda_report(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, CUPTI_API_ENTER, name, &p, &r, symbol, corr);
  const uint32_t outer = fake_cuda_set_outer_correlation(corr);
  r = work(corr);
  fake_cuda_set_outer_correlation(outer);
  fake_cuda_report(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, CUPTI_API_EXIT, name, &p, &r, symbol, corr);
  return fail(r);
}

fake_kernel* kernel_of_host_fn(const void* host_fn) {
  std::lock_guard<std::mutex> lk(mu);
  auto it = host_fns.find(host_fn);
  return it == host_fns.end() ? nullptr : it->second;
}

// The name a launch callback carries (symbolName).
const char* name_of(fake_kernel* k) {
  const char* n = nullptr;
  if (k) cuFuncGetName(&n, reinterpret_cast<CUfunction>(k));
  return n;
}

}  // namespace

FAKE_API void* fake_cudart_register_kernel(const void* host_fn, const char* mangled_name, fake_kernel_body body,
                                           const size_t* offsets, const size_t* sizes, int nparams) {
  fake_kernel* k = fake_cuda_kernel(mangled_name, body, offsets, sizes, nparams);
  std::lock_guard<std::mutex> lk(mu);
  host_fns[host_fn] = k;
  return fake_cuda_cukernel(k);
}

FAKE_API uint64_t fake_cudart_calls_in_callbacks(void) { return calls_in_callbacks.load(); }

FAKE_API cudaError_t cudaGetDeviceCount(int* n) {
  entered();
  if (!n) return fail(cudaErrorInvalidValue);
  *n = 1;
  return cudaSuccess;
}

FAKE_API cudaError_t cudaGetLastError(void) {
  entered();
  const cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

FAKE_API cudaError_t cudaPeekAtLastError(void) {
  entered();
  return last_error;
}

FAKE_API const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorMemoryAllocation: return "out of memory";
    default: return "fake runtime error";
  }
}

FAKE_API cudaError_t cudaMalloc(void** ptr, size_t size) {
  entered();
  cudaMalloc_v3020_params p{ptr, size};
  return runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc_v3020", p, nullptr, [&](uint32_t) {
    if (!ptr) return cudaErrorInvalidValue;
    CUdeviceptr d = 0;
    const cudaError_t e = of(cuMemAlloc_v2(&d, size));
    *ptr = reinterpret_cast<void*>(d);
    return e;
  });
}

FAKE_API cudaError_t cudaFree(void* ptr) {
  entered();
  cudaFree_v3020_params p{ptr};
  return runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree_v3020", p, nullptr, [&](uint32_t) {
    return ptr ? of(cuMemFree_v2(reinterpret_cast<CUdeviceptr>(ptr))) : cudaSuccess;
  });
}

FAKE_API cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind) {
  entered();
  if (!dst || !src) return fail(cudaErrorInvalidValue);
  std::memmove(dst, src, n);
  return cudaSuccess;
}

FAKE_API cudaError_t cudaStreamCreate(cudaStream_t* s) {
  entered();
  return fail(of(cuStreamCreate(reinterpret_cast<CUstream*>(s), 0)));
}

FAKE_API cudaError_t cudaStreamSynchronize(cudaStream_t) {
  entered();
  return cudaSuccess;
}

FAKE_API cudaError_t cudaDeviceSynchronize(void) {
  entered();
  return cudaSuccess;
}

FAKE_API cudaError_t cudaGetFuncBySymbol(cudaFunction_t* f, const void* host_fn) {
  entered();
  // What the real runtime does when asked from inside a CUPTI callback (issue 9).
  if (fake_cuda_in_callback()) return fail(cudaErrorInvalidDeviceFunction);
  fake_kernel* k = kernel_of_host_fn(host_fn);
  if (!f || !k) return fail(cudaErrorInvalidDeviceFunction);
  *f = reinterpret_cast<cudaFunction_t>(k);
  return cudaSuccess;
}

// The runtime's launches run without driver callbacks: CUPTI issues none for the driver calls
// the runtime makes inside (a CUPTI trace shows consecutive runtime correlation ids around
// cudaLaunchKernel with no driver record between them; CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API,
// cupti_activity.h, exists for those). The tracer sees the runtime callback only: the host
// entry function, the argument array and the kernel's (mangled) name.
template <class Params>
cudaError_t launch(CUpti_CallbackId cbid, const char* name, Params& params, const void* func, dim3 grid, dim3 block,
                   void** args, cudaStream_t stream) {
  fake_kernel* k = kernel_of_host_fn(func);
  return runtime_call(cbid, name, params, name_of(k), [&](uint32_t corr) {
    if (!k) return cudaErrorInvalidDeviceFunction;
    return of(fake_cuda_run(k, grid.x, block.x, args, corr, reinterpret_cast<CUstream>(stream)));
  });
}

FAKE_API cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shmem,
                                      cudaStream_t stream) {
  entered();
  cudaLaunchKernel_v7000_params p{func, grid, block, args, shmem, stream};
  return launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel_v7000", p, func, grid, block,
                args, stream);
}

FAKE_API cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shmem,
                                                 cudaStream_t stream) {
  entered();
  cudaLaunchCooperativeKernel_v9000_params p{func, grid, block, args, shmem, stream};
  return launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, "cudaLaunchCooperativeKernel_v9000", p,
                func, grid, block, args, stream);
}

FAKE_API cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  entered();
  if (!config) return fail(cudaErrorInvalidValue);
  cudaLaunchKernelExC_v11060_params p{config, func, args};
  return launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, "cudaLaunchKernelExC_v11060", p, func,
                config->gridDim, config->blockDim, args, config->stream);
}

// CUDA 13's kernel<<<...>>>() entry point, given a cudaKernel_t (a CUkernel). This fake launches
// it without driver callbacks (a runtime that launches another way): the tracer must then read
// the arguments through the CUkernel.
FAKE_API cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shmem,
                                        cudaStream_t stream) {
  entered();
  fake_kernel* k = fake_cuda_kernel_of(kernel);
  cudaLaunchKernel_v7000_params p{kernel, grid, block, args, shmem, stream};
  return runtime_call(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, "__cudaLaunchKernel_v13000", p, name_of(k),
                      [&](uint32_t corr) {
                        if (!k) return cudaErrorInvalidDeviceFunction;
                        return of(fake_cuda_run(k, grid.x, block.x, args, corr, reinterpret_cast<CUstream>(stream)));
                      });
}

// Stream capture and graphs. Each call reports a runtime callback only: the driver work inside
// issues no driver callbacks, as in the real runtime.
FAKE_API cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode) {
  entered();
  cudaStreamBeginCapture_v10000_params p{s, mode};
  return runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000, "cudaStreamBeginCapture_v10000", p,
                      nullptr, [&](uint32_t) {
                        return of(fake_cuda_begin_capture(reinterpret_cast<CUstream>(s), CUstreamCaptureMode(mode)));
                      });
}

FAKE_API cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) {
  entered();
  cudaStreamEndCapture_v10000_params p{s, g};
  return runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, "cudaStreamEndCapture_v10000", p, nullptr,
                      [&](uint32_t) {
                        return of(fake_cuda_end_capture(reinterpret_cast<CUstream>(s), reinterpret_cast<CUgraph*>(g)));
                      });
}

FAKE_API cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* st) {
  entered();
  CUstreamCaptureStatus c = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult r = fake_cuda_is_capturing(reinterpret_cast<CUstream>(s), &c);
  if (st) *st = cudaStreamCaptureStatus(c);
  return fail(of(r));
}

FAKE_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long flags) {
  entered();
  cudaGraphInstantiate_v12000_params p{e, g, flags};
  return runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000, "cudaGraphInstantiate_v12000", p, nullptr,
                      [&](uint32_t) {
                        return of(fake_cuda_instantiate(reinterpret_cast<CUgraphExec*>(e), reinterpret_cast<CUgraph>(g)));
                      });
}

FAKE_API cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
  entered();
  cudaGraphLaunch_v10000_params p{e, s};
  return runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, "cudaGraphLaunch_v10000", p, nullptr,
                      [&](uint32_t corr) {
                        return of(fake_cuda_graph_launch(reinterpret_cast<CUgraphExec>(e), reinterpret_cast<CUstream>(s), corr));
                      });
}

FAKE_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  entered();
  return fail(of(cuGraphExecDestroy(reinterpret_cast<CUgraphExec>(e))));
}

FAKE_API cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  entered();
  return fail(of(cuGraphDestroy(reinterpret_cast<CUgraph>(g))));
}
