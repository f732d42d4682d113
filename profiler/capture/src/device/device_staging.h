// Device-index lookups when they cannot be counted on the device (no counting module for the
// GPU, no device memory for a table's counters; see device_counting.h): each batch is copied
// (cuMemcpyDtoHAsync) into a pinned staging buffer on the caller's stream, followed by an
// event; the background thread polls the events and counts the finished copies on the host.
// The caller never waits for the GPU.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "cuda_driver.h"

namespace edo::capture {

class DeviceStaging {
 public:
  DeviceStaging(const Driver& drv, uint64_t max_bytes) : drv_(drv), max_bytes_(max_bytes) {}
  DeviceStaging(const DeviceStaging&) = delete;
  DeviceStaging& operator=(const DeviceStaging&) = delete;

  // Queues the copy of one batch on `stream`; an edo error code.
  int lookup(int64_t table, const void* indices, uint64_t count, int type, CUstream stream);
  // Counts every finished copy in order (with `wait_all`, waits up to 2 s for the rest).
  using Ingest = std::function<void(int64_t table, const void* host, uint64_t count, int type)>;
  void poll(bool wait_all, const Ingest& ingest);

 private:
  struct Pending {
    int64_t table;
    int type;
    uint64_t count;
    void* host;
    size_t capacity;
    CUevent event;
    CUcontext ctx;
  };
  const Driver& drv_;
  const uint64_t max_bytes_;
  std::mutex mu_;
  std::deque<Pending> pending_;       // mu_
  std::vector<Pending> free_;         // mu_ (host buffer + event kept)
  uint64_t staged_bytes_ = 0;         // mu_
  std::mutex poll_mu_;                // one poller at a time (background thread, exit handlers)
};

}  // namespace edo::capture
