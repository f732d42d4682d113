// The CUDA backend (edo_kernels_cuda). This header has no CUDA includes: it compiles in every
// build. A build without a CUDA toolkit links an edo_kernels_cuda whose every entry point says
// "no CUDA device: this edo was built without the CUDA toolkit ..."; a machine without a
// usable GPU gets "no CUDA device: <the reason, in words>" (no driver, driver too old, no GPU).
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

#include "edo/kernels/backend.h"
#include "edo/kernels/strategy.h"

namespace edo::kernels::cuda {

// "" when a device can be used, else "no CUDA device: <reason>" (one line).
std::string device_status();
inline bool available() { return device_status().empty(); }
// "<name>, <N> SMs, <GiB> GiB, sm_<cc>" of device 0, or the status line.
std::string device_description();

// What the bounds need to know about device 0.
struct DeviceInfo {
  int sms = 0;
  double clock_ghz = 0;           // SM clock
  std::uint64_t l2_bytes = 0, memory_bytes = 0;
  int cc_major = 0, cc_minor = 0;
  // Shared memory / L1: 128 bytes per clock per SM (32 banks x 4 B), in GB/s.
  double onchip_gbs() const { return sms * clock_ghz * 128.0; }
};
DeviceInfo device_info();  // throws std::runtime_error with device_status() without a device

// The CUDA backend (make_backend("cuda") returns one); throws std::runtime_error with
// device_status() when no device can be used.
std::unique_ptr<Backend> make_cuda_backend();

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
  // Allocates what lookups of up to `max_indices` indices need (offload LRU's per-batch
  // workspace), so that no later lookup allocates. Lookups grow it themselves otherwise.
  virtual void reserve(std::int64_t max_indices) { (void)max_indices; }
  // Waits for the table's work; throws IndexOutOfRange for a bad index seen since the last call.
  virtual void synchronize() = 0;
  // Copies the (possibly trained) table back for comparisons: decoded rows, rows x dim.
  virtual void download_rows(float* out) = 0;
  // Offload: hit rate of the device cache since reset_stats() (reads the device counters:
  // synchronises the table's stream). -1 for other formats.
  virtual double hit_rate() { return -1.0; }
  virtual void reset_stats() {}
  // The stream the table's kernels run on (a cudaStream_t).
  virtual void* stream() const = 0;
  std::uint64_t rows() const { return rows_; }
  std::uint32_t dim() const { return dim_; }

 protected:
  std::uint64_t rows_ = 0;
  std::uint32_t dim_ = 0;
};

// Convenience for tests: host arrays in, host array out (synchronous, checked; the device
// output is poisoned with NaN first, so an element a kernel forgot to write shows).
void gather_host(DeviceTable& t, const std::int64_t* idx, std::int64_t n, float* out);
void bag_host(DeviceTable& t, const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags,
              const float* psw, Pooling mode, float* out);

// Anchors, measured with events on a stream of their own:
// device-to-device cudaMemcpy bandwidth in GB/s, counting bytes read + written;
double d2d_copy_gbs(std::uint64_t bytes = 1ull << 30, int reps = 10);
// pinned host -> device cudaMemcpy bandwidth in GB/s (the link offload's misses cross).
double h2d_copy_gbs(std::uint64_t bytes = 256ull << 20, int reps = 10);

}  // namespace edo::kernels::cuda
