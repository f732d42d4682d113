// Reading a weight snapshot's rows out of device memory, through the driver API (dlopen'ed,
// like everything CUDA in libedo_trace.so). The copy runs on a stream of the tracer's own,
// made to wait for an event recorded on the job's stream: it sees the job's queued writes and
// synchronises only itself. Driver calls return their errors; nothing sticky is left behind
// for the job's runtime.
#include <cuda.h>

#include <cstring>
#include <mutex>

#include "cuda_driver.h"
#include "edo/edo.h"
#include "events.h"
#include "weights.h"
#include "weight_runs.h"

namespace edo::capture {
namespace {

// The driver table of cuda_driver.h (no table of its own). One snapshot read at a time (they
// share nothing else).
std::mutex read_mu;

constexpr uint64_t kStaging = uint64_t{16} << 20;  // pinned bytes per round trip
constexpr uint64_t kGap = uint64_t{64} << 10;      // copy across gaps up to this size

// Owns the private stream, the event and the staging buffer; frees them on every path.
struct Resources {
  const Driver& api;
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
  if (!tracer_config().cuda) return EDO_ERR_NO_CUDA;
  const Driver* drv = load_driver();
  if (!drv || !drv->can_read_weights()) return EDO_ERR_NO_CUDA;
  const Driver& api = *drv;
  std::lock_guard<std::mutex> lk(read_mu);
  CUstream js = static_cast<CUstream>(job_stream);
  // edo's own calls, on the job's thread: RELAXED capture mode (another thread may capture in
  // GLOBAL mode), and nothing at all on a stream that is being captured (an event record
  // there would be captured; the legacy stream while a blocking stream captures: IMPLICIT).
  InternalCall internal;
  if (capture_status(api, js) != Capture::kNone) return EDO_ERR_CUDA;
  // The job stream's context, current for the scope (a failed push is never popped).
  CUcontext ctx = nullptr;
  const CUresult got = api.cuStreamGetCtx ? api.cuStreamGetCtx(js, &ctx) : api.cuCtxGetCurrent(&ctx);
  if (got != CUDA_SUCCESS || !ctx) return EDO_ERR_NO_CUDA;
  ScopedContext in_ctx(api, ctx);
  if (!in_ctx.ok()) return EDO_ERR_CUDA;
  Resources res{api};
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
