// A fake CUDA stack for running the tracer's GPU mechanisms on a machine without a GPU:
//   libcuda.so.1    (fake_driver.cpp)   driver entry points the tracer and the fake runtime use;
//                                       "device" memory is host memory, kernels are host
//                                       functions run at launch, every stream is synchronous
//   libcupti.so.13  (fake_cupti.cpp)    the CUPTI entry points the tracer loads (subscription,
//                                       callbacks, activity buffers with CUpti_ActivityKernel10
//                                       and CUpti_ActivityMemory4 records)
//   libcudart.so.13 (fake_runtime.cpp)  the runtime entry points a job calls; like the real one
//                                       its launches and graph calls issue no driver callbacks,
//                                       and it keeps a per-thread last error
// Stream capture and graphs: fake_capture.h.
// Like the real stack, the driver and the runtime report their calls to the CUPTI subscriber
// (ENTER and EXIT callbacks with the real *_params structs), and a runtime call made from
// inside a callback is what breaks a job (issue 9): the fake counts them.
//
// This header is the fakes' private interface (the job uses the fake_cudart_* part).
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <cstddef>
#include <cstdint>

extern "C" {

// ---- kernels (driver) ----------------------------------------------------------------------
// A kernel body: runs the whole grid on the host. args: one pointer per parameter.
typedef void (*fake_kernel_body)(void** args, unsigned grid_x, unsigned block_x);
struct fake_kernel;  // what CUfunction and CUkernel handles of the fake point at
// The driver owns every kernel it makes until the process exits (the caller never frees one).
fake_kernel* fake_cuda_kernel(const char* mangled_name, fake_kernel_body body, const size_t* offsets,
                              const size_t* sizes, int nparams);
// Device functions a module image can name (cuModuleLoadData + cuModuleGetFunction): the
// fake "loads" any image and finds functions registered here by name.
void fake_cuda_register_module_function(const char* name, fake_kernel* k);
// A kernel's CUkernel handle (distinct from its CUfunction, the fake_kernel* itself), and the
// kernel behind either handle.
CUkernel fake_cuda_cukernel(fake_kernel* k);
fake_kernel* fake_cuda_kernel_of(const void* handle);
// Module unload and handle reuse: the kernel object `k` becomes another kernel (same handle).
void fake_cuda_reuse_kernel(fake_kernel* k, const char* mangled_name, fake_kernel_body body, const size_t* offsets,
                            const size_t* sizes, int nparams);

// A driver call that takes its time: from fake_cuda_hold_param_info(k) until
// fake_cuda_release_param_info(), every cuFuncGetParamInfo / cuKernelGetParamInfo about `k`
// waits (holding none of the fake's locks); fake_cuda_param_info_waiting() counts the callers
// waiting now. Models a query that loads its kernel first (CUDA_MODULE_LOADING=LAZY, the
// default since CUDA 12.2, loads a kernel at its first use: CUDA C++ Programming Guide,
// "Lazy Loading"), so that a test can fork while a thread is inside a tool's launch callback.
void fake_cuda_hold_param_info(fake_kernel* k);
int fake_cuda_param_info_waiting(void);
void fake_cuda_release_param_info(void);

// ---- the tool hook (the fake libcupti installs it) ------------------------------------------
struct fake_cuda_tool {
  // One ENTER or EXIT callback of an API call, if the subscriber enabled it.
  void (*callback)(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
                   const char* function, const void* params, void* return_value, const char* symbol,
                   uint32_t correlation);
  // Activity records (kept until the subscriber flushes).
  void (*kernel_record)(const char* name, uint64_t start, uint64_t end, uint32_t correlation);
  void (*memory_record)(bool alloc, uint64_t address, uint64_t bytes, uint32_t correlation);
  // Hands every waiting record to the subscriber now (what CUPTI's worker thread does at its
  // flush period, cupti_activity.h:7727 and 8058-8067).
  void (*deliver)(void);
};
void fake_cuda_set_tool(const fake_cuda_tool* tool);

// Used by the fake runtime: report an API call to the tool; a new correlation id; whether a
// tool callback is running on this thread.
void fake_cuda_report(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
                      const char* function, const void* params, void* return_value, const char* symbol,
                      uint32_t correlation);
uint32_t fake_cuda_next_correlation();
int fake_cuda_in_callback(void);
// The correlation id of the API call the application made on this thread (what activity
// records carry): set by the runtime around its calls; returns the previous one.
uint32_t fake_cuda_set_outer_correlation(uint32_t correlation);
// Runs a launch without driver callbacks (a runtime that launches another way); the kernel
// record carries `correlation`.
CUresult fake_cuda_run(fake_kernel* k, unsigned grid_x, unsigned block_x, void** args, uint32_t correlation,
                       CUstream stream);
// Stream capture and graphs without driver callbacks (what the runtime's calls do inside;
// fake_capture.h).
CUresult fake_cuda_begin_capture(CUstream s, CUstreamCaptureMode mode);
CUresult fake_cuda_end_capture(CUstream s, CUgraph* graph);
CUresult fake_cuda_instantiate(CUgraphExec* exec, CUgraph graph);
CUresult fake_cuda_graph_launch(CUgraphExec exec, CUstream s, uint32_t correlation);
CUresult fake_cuda_is_capturing(CUstream s, CUstreamCaptureStatus* status);
// Driver calls a tool made from another thread while a capture was in progress.
uint64_t fake_cuda_foreign_calls(void);
// Driver calls made before cuInit (the job's runtime calls it at its first CUDA call), and
// whether a tool (the fake libcupti's subscriber) is attached.
uint64_t fake_cuda_calls_before_init(void);
int fake_cuda_tool_attached(void);
// Device memory the fake handed out and has not freed, in bytes.
uint64_t fake_cuda_live_bytes(void);
// The most device memory (cuMemAlloc_v2) live at once, in bytes.
uint64_t fake_cuda_peak_bytes(void);
// Contexts: a second context besides device 0's primary one (cuCtxSetCurrent switches the
// calling thread to it); pops that had no push before them on their thread (each takes the
// caller's own context away); cuLaunchKernel calls refused because the stream belongs to
// another context than the current one; retains of the primary context (the job's runtime
// holds one).
CUcontext fake_cuda_other_context(void);
uint64_t fake_cuda_unbalanced_pops(void);
uint64_t fake_cuda_wrong_context_launches(void);
int fake_cuda_primary_retains(void);
// cuEventQuery calls finished so far (from any thread).
uint64_t fake_cuda_event_queries(void);
// FAKE_CUPTI_DELIVER_IN_QUERY=1: the first cuEventQuery waits (20 s at most) for a delivery of
// activity buffers on another thread (CUPTI's worker), the worst case of a driver call that
// cannot finish before the worker does. A tool that holds, across its query, a mutex its buffer
// callback takes deadlocks there: such waits that ran out are counted.
// FAKE_CUPTI_DELIVER_IN_LAUNCH=1: the same during the tracer's first counting-kernel launch
// (cuLaunchKernel of edo_count), counted there too. Both model a driver call that waits on
// CUPTI's worker thread (the worker delivers buffers on its own schedule, cupti_activity.h:7727,
// 8058-8067, and may call the tool's buffer callback while the tool's thread is in the driver).
uint64_t fake_cuda_blocked_deliveries(void);

// ---- the runtime part a job uses -------------------------------------------------------------
// Registers a kernel's host-side entry function (what cudaLaunchKernel is given) and returns its
// cudaKernel_t (what CUDA 13's __cudaLaunchKernel is given: a CUkernel, fake_cuda_cukernel).
void* fake_cudart_register_kernel(const void* host_fn, const char* mangled_name, fake_kernel_body body,
                                  const size_t* offsets, const size_t* sizes, int nparams);
// Runtime entry points called while a tool callback was running (should stay 0).
uint64_t fake_cudart_calls_in_callbacks(void);

}  // extern "C"
