// The CUDA backend's host-side interface. This header has no CUDA includes: it compiles in
// every build. Without a CUDA toolkit at build time every entry point reports
// "no CUDA device: this build has no CUDA backend"; with one, a machine without a usable
// GPU reports "no CUDA device: <cudaGetDeviceCount's reason>".
//
// A DeviceTable is an EncodedTable uploaded to the GPU (offload: the host part in pinned or
// managed memory). Lookups take device pointers and run on the table's stream; an
// out-of-range index sets a device flag, its row reads as zeros, and the next
// synchronize() throws IndexOutOfRange naming the first bad index seen.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/strategy.h"

namespace edo::kernels::cuda {

// "" when a device can be used, else "no CUDA device: <reason>".
std::string device_status();
inline bool available() { return device_status().empty(); }
// "<name>, <N> SMs, <GiB> GiB, sm_<cc>" of device 0, or the status line.
std::string device_description();

// Device memory, freed by the destructor.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::uint64_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }
  template <class T> T* as() const { return static_cast<T*>(p_); }
  std::uint64_t size() const { return n_; }
  void upload(const void* host, std::uint64_t bytes);
  void download(void* host, std::uint64_t bytes) const;
  void fill_nan();  // poison (every float = NaN)

 private:
  void* p_ = nullptr;
  std::uint64_t n_ = 0;
};

class DeviceTable {
 public:
  static std::unique_ptr<DeviceTable> upload(const EncodedTable& table);
  virtual ~DeviceTable() = default;
  virtual void gather(const std::int64_t* d_idx, std::int64_t n, float* d_out) = 0;
  virtual void bag(const std::int64_t* d_idx, std::int64_t n, const std::int64_t* d_offsets, std::int64_t n_bags,
                   const float* d_psw, Pooling mode, float* d_out) = 0;
  // fp32/fp16/bf16 only: W[row] -= lr * dL/dW[row] (atomic scatter-add).
  virtual void backward(const std::int64_t* d_idx, std::int64_t n, const std::int64_t* d_offsets, std::int64_t n_bags,
                        const float* d_psw, Pooling mode, const float* d_grad, float lr) = 0;
  // Waits for the table's work; throws IndexOutOfRange for a bad index seen since the last call.
  virtual void synchronize() = 0;
  // Copies the (possibly trained) table back for comparisons: decoded rows, rows x dim.
  virtual void download_rows(float* out) = 0;
  virtual double hit_rate() const { return -1.0; }
  virtual void reset_stats() {}
  std::uint64_t rows() const { return rows_; }
  std::uint32_t dim() const { return dim_; }

 protected:
  std::uint64_t rows_ = 0;
  std::uint32_t dim_ = 0;
};

// Convenience for tests: host arrays in, host array out (synchronous, checked).
void gather_host(DeviceTable& t, const std::int64_t* idx, std::int64_t n, float* out);
void bag_host(DeviceTable& t, const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
              const float* psw, Pooling mode, float* out);

// Anchor: device-to-device cudaMemcpy bandwidth in GB/s, counting bytes read + written.
double d2d_copy_gbs(std::uint64_t bytes = 1ull << 30, int reps = 10);

// Timed lookups on the device: median rows/s over `reps` passes over all sets (warm-up
// first). Index sets are uploaded once; bag offsets are CSR with `pooling` per bag.
struct DeviceTimes {
  double gather_rows_per_s = 0, bag_rows_per_s = 0, hit_rate = -1;
};
DeviceTimes time_lookups(const EncodedTable& table, const std::vector<std::vector<std::int64_t>>& sets,
                         std::uint32_t pooling, int reps, int warmup);

}  // namespace edo::kernels::cuda
