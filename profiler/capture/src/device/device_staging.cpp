#include "device_staging.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "edo/edo.h"
#include "events.h"

namespace edo::capture {

int DeviceStaging::lookup(int64_t table, const void* indices, uint64_t count, int type, CUstream s) {
  const size_t bytes = size_t(count) * (type == EDO_I64 ? 8 : 4);
  InternalCall internal;  // RELAXED: the caller may be capturing a CUDA graph
  // A copy and an event record in a capture would be replayed, not run now: not counted. The
  // legacy stream while a blocking stream captures (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) too.
  if (capture_status(drv_, s) != Capture::kNone) {
    count_drop("device_batches_in_graph_capture", 1);
    return EDO_ERR_CUDA;
  }
  CUcontext ctx = nullptr;
  // The stream's context (cuda.h:15134-15147), current for the copy and the event.
  const CUresult got = drv_.cuStreamGetCtx ? drv_.cuStreamGetCtx(s, &ctx) : drv_.cuCtxGetCurrent(&ctx);
  if (got != CUDA_SUCCESS || !ctx) return EDO_ERR_NO_CUDA;
  ScopedContext in_ctx(drv_, ctx);
  if (!in_ctx.ok()) {
    count_drop("device_batches", 1);
    return EDO_ERR_CUDA;
  }
  Pending p{};
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (staged_bytes_ + bytes > max_bytes_) {
      count_drop("device_batches", 1);
      return EDO_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].capacity >= bytes && free_[i].ctx == ctx) {
        p = free_[i];
        free_.erase(free_.begin() + long(i));
        break;
      }
    }
    staged_bytes_ += p.host ? p.capacity : bytes;
  }
  if (!p.host) {
    p.capacity = bytes;
    p.ctx = ctx;
    if (drv_.cuMemHostAlloc(&p.host, bytes, 0) != CUDA_SUCCESS) p.host = nullptr;
    if (p.host && drv_.cuEventCreate(&p.event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) p.event = nullptr;
    if (!p.host || !p.event) {
      if (p.host && drv_.cuMemFreeHost) drv_.cuMemFreeHost(p.host);
      std::lock_guard<std::mutex> lk(mu_);
      staged_bytes_ -= bytes;
      count_drop("device_batches", 1);
      return EDO_ERR_CUDA;
    }
  }
  p.table = table;
  p.type = type;
  p.count = count;
  if (drv_.cuMemcpyDtoHAsync(p.host, reinterpret_cast<CUdeviceptr>(indices), bytes, s) != CUDA_SUCCESS ||
      drv_.cuEventRecord(p.event, s) != CUDA_SUCCESS) {
    std::lock_guard<std::mutex> lk(mu_);
    staged_bytes_ -= p.capacity;
    free_.push_back(p);
    count_drop("device_batches", 1);
    return EDO_ERR_CUDA;
  }
  std::lock_guard<std::mutex> lk(mu_);
  pending_.push_back(p);
  return EDO_OK;
}

void DeviceStaging::poll(bool wait_all, const Ingest& ingest) {
  std::lock_guard<std::mutex> poll_lock(poll_mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (true) {
    Pending p{};
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (pending_.empty()) return;
      p = pending_.front();
    }
    CUresult q;
    {
      InternalCall internal;  // RELAXED: another thread may be capturing in GLOBAL mode
      ScopedContext cur(drv_, p.ctx);  // a failed push is never popped
      q = cur.ok() ? drv_.cuEventQuery(p.event) : CUDA_ERROR_INVALID_CONTEXT;
    }
    if (q == CUDA_ERROR_NOT_READY) {
      if (!wait_all || std::chrono::steady_clock::now() > deadline) return;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    if (q == CUDA_SUCCESS) ingest(p.table, p.host, p.count, p.type);
    else count_drop("device_batches", 1);
    std::lock_guard<std::mutex> lk(mu_);
    pending_.pop_front();
    staged_bytes_ -= std::min(staged_bytes_, uint64_t(p.capacity));
    if (free_.size() < 32) free_.push_back(p);
  }
}

}  // namespace edo::capture
