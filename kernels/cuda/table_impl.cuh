// Internal to edo_kernels_cuda: what every table kind shares (error checks, the DeviceTable
// base; the argument block of a lookup and the out-of-range flag are in bag_args.h) and the
// factories of the kinds.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "cuda/bag_args.h"
#include "edo/kernels/cuda.h"
#include "edo/kernels/formats/common.h"

namespace edo::kernels::cuda::detail {

void check(cudaError_t e, const char* what);  // throws std::runtime_error naming the call
#define EDO_CUDA(x) ::edo::kernels::cuda::detail::check((x), #x)

inline int blocks_for(std::int64_t items, int per_block) { return static_cast<int>((items + per_block - 1) / per_block); }

// The DeviceTable base: a stream of its own, the error flag, gather and bag through launch().
class TableImpl : public DeviceTable {
 public:
  explicit TableImpl(const EncodedTable& t);
  ~TableImpl() override;
  void synchronize() override;
  void gather(const std::int64_t* idx, std::int64_t n, float* out) override;
  void bag(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags, const float* psw, Pooling mode,
           float* out) override;
  void backward(const std::int64_t*, std::int64_t, const std::int64_t*, std::int64_t, const float*, Pooling, const float*, float) override;
  void download_rows(float* out) override;
  void* stream() const override { return stream_; }

 protected:
  BagArgs args(const std::int64_t* idx, const std::int64_t* offsets, std::int64_t n_bags, const float* psw, Pooling mode, float* out) const {
    return BagArgs{idx, offsets, n_bags, psw, mode == Pooling::Mean ? 1 : 0, out, dim_, rows_, err_};
  }
  // Runs the lookup (n indices in total) on stream_. Never synchronises, never allocates
  // unless the batch is larger than any before (offload's workspace).
  virtual void launch(const BagArgs& a, std::int64_t n) = 0;
  static DeviceBuffer upload_array(const FormatData& f, const char* name);
  cudaStream_t stream_{};
  ErrFlag* err_ = nullptr;
};

std::unique_ptr<DeviceTable> make_row_table(const EncodedTable& t);
std::unique_ptr<DeviceTable> make_generic_table(const EncodedTable& t);  // PQ, multi-hash, QR, low rank, pruned
std::unique_ptr<DeviceTable> make_offload_table(const EncodedTable& t);

}  // namespace edo::kernels::cuda::detail
