// Reading a weight snapshot's rows out of device memory, through the driver API (dlopen'ed,
// like everything CUDA in libedo_trace.so). The copy runs on a stream of the tracer's own,
// made to wait for an event recorded on the job's stream: it sees the job's queued writes and
// synchronises only itself. Driver calls return their errors; nothing sticky is left behind
// for the job's runtime.
#include <cuda.h>
#include <dlfcn.h>

#include <cstring>
#include <mutex>

#include "cuda_driver.h"
#include "edo/edo.h"
#include "tracer.h"
#include "weight_runs.h"

namespace edo::capture {
namespace {

struct Api {
  bool loaded = false;
  CUresult (*cuCtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*cuStreamCreate)(CUstream*, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned) = nullptr;
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned) = nullptr;
  CUresult (*cuMemFreeHost)(void*) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
};
Api api;
std::once_flag api_once;
std::mutex read_mu;  // one snapshot read at a time (they share nothing else)

template <class T>
void sym(void* h, T& f, const char* name) {
  f = reinterpret_cast<T>(dlsym(h, name));
}

bool load_api() {
  std::call_once(api_once, [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    sym(h, api.cuCtxGetCurrent, "cuCtxGetCurrent");
    sym(h, api.cuStreamCreate, "cuStreamCreate");
    sym(h, api.cuStreamDestroy, "cuStreamDestroy_v2");
    sym(h, api.cuStreamSynchronize, "cuStreamSynchronize");
    sym(h, api.cuStreamWaitEvent, "cuStreamWaitEvent");
    sym(h, api.cuStreamIsCapturing, "cuStreamIsCapturing");
    sym(h, api.cuEventCreate, "cuEventCreate");
    sym(h, api.cuEventRecord, "cuEventRecord");
    sym(h, api.cuEventDestroy, "cuEventDestroy_v2");
    sym(h, api.cuMemHostAlloc, "cuMemHostAlloc");
    sym(h, api.cuMemFreeHost, "cuMemFreeHost");
    sym(h, api.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    api.loaded = api.cuCtxGetCurrent && api.cuStreamCreate && api.cuStreamDestroy && api.cuStreamSynchronize &&
                 api.cuStreamWaitEvent && api.cuEventCreate && api.cuEventRecord && api.cuEventDestroy &&
                 api.cuMemHostAlloc && api.cuMemFreeHost && api.cuMemcpyDtoHAsync;
  });
  return api.loaded;
}

constexpr uint64_t kStaging = uint64_t{16} << 20;  // pinned bytes per round trip
constexpr uint64_t kGap = uint64_t{64} << 10;      // copy across gaps up to this size

// Owns the private stream, the event and the staging buffer; frees them on every path.
struct Resources {
  CUstream stream = nullptr;
  CUevent event = nullptr;
  void* staging = nullptr;
  ~Resources() {
    if (stream) api.cuStreamSynchronize(stream);
    if (staging) api.cuMemFreeHost(staging);
    if (event) api.cuEventDestroy(event);
    if (stream) api.cuStreamDestroy(stream);
  }
};

}  // namespace

int cuda_read_rows(const void* base, uint64_t stride, uint64_t row_bytes, const std::vector<uint64_t>& sorted, char* out,
                   void* job_stream) {
  if (!tracer_config().cuda || !load_api()) return EDO_ERR_NO_CUDA;
  std::lock_guard<std::mutex> lk(read_mu);
  CUcontext ctx = nullptr;
  if (api.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) return EDO_ERR_NO_CUDA;
  CUstream js = static_cast<CUstream>(job_stream);
  // edo's own calls, on the job's thread: RELAXED capture mode (another thread may capture in
  // GLOBAL mode), and nothing at all on a stream that is being captured (an event record
  // there would be captured; the legacy stream while a blocking stream captures: IMPLICIT).
  InternalCall internal;
  if (const Driver* drv = load_driver(); drv && capture_status(*drv, js) != Capture::kNone) return EDO_ERR_CUDA;
  if (api.cuStreamIsCapturing) {
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (api.cuStreamIsCapturing(js, &st) != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE) return EDO_ERR_CUDA;
  }
  Resources res;
  if (api.cuStreamCreate(&res.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    res.stream = nullptr;
    return EDO_ERR_CUDA;
  }
  if (api.cuEventCreate(&res.event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
    res.event = nullptr;
    return EDO_ERR_CUDA;
  }
  const uint64_t staging_bytes = std::max(kStaging, row_bytes);
  if (api.cuMemHostAlloc(&res.staging, staging_bytes, 0) != CUDA_SUCCESS) {
    res.staging = nullptr;
    return EDO_ERR_NO_MEMORY;
  }
  if (api.cuEventRecord(res.event, js) != CUDA_SUCCESS || api.cuStreamWaitEvent(res.stream, res.event, 0) != CUDA_SUCCESS)
    return EDO_ERR_CUDA;
  const auto runs = plan_copy_runs(sorted, stride, row_bytes, kGap, staging_bytes);
  auto* staging = static_cast<char*>(res.staging);
  const auto dev = reinterpret_cast<CUdeviceptr>(base);
  size_t r = 0;
  while (r < runs.size()) {
    // Fill the staging buffer with as many runs as fit, wait, then scatter their rows.
    uint64_t used = 0;
    size_t first = r;
    std::vector<uint64_t> offset;
    while (r < runs.size() && used + run_bytes(runs[r], stride, row_bytes) <= staging_bytes) {
      const uint64_t n = run_bytes(runs[r], stride, row_bytes);
      if (api.cuMemcpyDtoHAsync(staging + used, dev + runs[r].first_row * stride, n, res.stream) != CUDA_SUCCESS)
        return EDO_ERR_CUDA;
      offset.push_back(used);
      used += n;
      ++r;
    }
    if (api.cuStreamSynchronize(res.stream) != CUDA_SUCCESS) return EDO_ERR_CUDA;
    for (size_t k = first; k < r; ++k)
      for (size_t i = runs[k].begin; i < runs[k].end; ++i)
        std::memcpy(out + i * row_bytes, staging + offset[k - first] + (sorted[i] - runs[k].first_row) * stride, row_bytes);
  }
  return EDO_OK;
}

}  // namespace edo::capture
