// CUDA kernels of the row formats (fp32, fp16, bf16, fp8, int8, int4): the launches and the
// backward pass. The lookup kernels' bodies, their chunk decoders and why they decode as they
// do are in row_chunks.h (host and device code: the unit tests run them on the CPU).
#include <cuda_runtime.h>

#include "cuda/row_chunks.h"
#include "cuda/table_impl.cuh"
#include "edo/kernels/formats/row_formats.h"

namespace edo::kernels::cuda::detail {
namespace {

template <RowKind K, int G>
__global__ void __launch_bounds__(kRowBlock) row_bag_vec(RowView v, BagArgs a) {
  row_bag_vec_thread<K, G>(v, a, static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x);
}

template <RowKind K>
__global__ void row_bag_scalar(RowView v, BagArgs a) {
  row_bag_scalar_thread<K>(v, a, static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x);
}

// Backward: W[row] -= lr * w * grad[bag] (/len for mean), atomically; 16-bit formats use a
// compare-and-swap on the aligned 32-bit word, rounding with the format's own conversion.
template <RowKind K>
__device__ void atomic_sub_elem(std::uint8_t* row, std::uint32_t d, float delta) {
  if constexpr (K == RowKind::F32) {
    atomicAdd(reinterpret_cast<float*>(row) + d, -delta);
  } else {
    auto* h = reinterpret_cast<std::uint16_t*>(row) + d;
    auto* word = reinterpret_cast<unsigned int*>(reinterpret_cast<std::uintptr_t>(h) & ~std::uintptr_t{3});
    const unsigned int shift = (reinterpret_cast<std::uintptr_t>(h) & 2u) ? 16u : 0u;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      const std::uint16_t cur = static_cast<std::uint16_t>((assumed >> shift) & 0xffffu);
      const float f = (K == RowKind::F16 ? half_to_float(cur) : bf16_to_float(cur)) - delta;
      const std::uint16_t nw = K == RowKind::F16 ? float_to_half(f) : float_to_bf16(f);
      const unsigned int repl = (assumed & ~(0xffffu << shift)) | (static_cast<unsigned int>(nw) << shift);
      old = atomicCAS(word, assumed, repl);
    } while (old != assumed);
  }
}

template <RowKind K>
__global__ void row_backward(RowView v, BagArgs a, const float* grad, float lr) {
  const int lane = threadIdx.x % 32;
  const std::int64_t bag = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (bag >= a.n_bags) return;
  std::int64_t s, e;
  bag_bounds(a, bag, s, e);
  const float inv = bag_scale(a, s, e);
  for (std::int64_t p = s; p < e; ++p) {
    const std::int64_t r = a.idx[p];
    if (!in_range(r, a.rows, p, a.err)) continue;
    const float w = (a.psw ? a.psw[p] : 1.f) * inv * lr;
    std::uint8_t* row = const_cast<std::uint8_t*>(v.base) + static_cast<std::uint64_t>(r) * v.row_bytes;
    for (std::uint32_t d = lane; d < v.dim; d += 32) atomic_sub_elem<K>(row, d, w * grad[static_cast<std::uint64_t>(bag) * v.dim + d]);
  }
}

class RowTableImpl final : public TableImpl {
 public:
  explicit RowTableImpl(const EncodedTable& t) : TableImpl(t) {
    const FormatData f = t.format_data();
    kind_ = static_cast<RowKind>(static_cast<int>(f.kind));  // FormatKind's first six match RowKind
    row_bytes_ = f.row_bytes;
    rows_buf_ = upload_array(f, "rows");
    table_scale_ = static_cast<float>(f.scalar("table_scale"));
  }
  void backward(const std::int64_t* idx, std::int64_t, const std::int64_t* offsets, std::int64_t n_bags, const float* psw, Pooling mode,
                const float* grad, float lr) override {
    const BagArgs a = args(idx, offsets, n_bags, psw, mode, nullptr);
    const RowView v = view();
    const int grid = blocks_for(n_bags * 32, 256);
    switch (kind_) {
      case RowKind::F32: row_backward<RowKind::F32><<<grid, 256, 0, stream_>>>(v, a, grad, lr); break;
      case RowKind::F16: row_backward<RowKind::F16><<<grid, 256, 0, stream_>>>(v, a, grad, lr); break;
      case RowKind::BF16: row_backward<RowKind::BF16><<<grid, 256, 0, stream_>>>(v, a, grad, lr); break;
      default: throw std::logic_error("this strategy has no backward (fp32, fp16 and bf16 only)");
    }
    EDO_CUDA(cudaGetLastError());
  }

 private:
  RowView view() const { return RowView{rows_buf_.as<std::uint8_t>(), row_bytes_, dim_, table_scale_}; }
  template <RowKind K>
  void launch_kind(const BagArgs& a) {
    const RowView v = view();
    if (row_vec_path<K>(row_bytes_, dim_)) {
      const int g = row_vec_lanes<K>(dim_);
      const int grid = blocks_for(a.n_bags * g, kRowBlock);
      switch (g) {
        case 1: row_bag_vec<K, 1><<<grid, kRowBlock, 0, stream_>>>(v, a); break;
        case 2: row_bag_vec<K, 2><<<grid, kRowBlock, 0, stream_>>>(v, a); break;
        case 4: row_bag_vec<K, 4><<<grid, kRowBlock, 0, stream_>>>(v, a); break;
        case 8: row_bag_vec<K, 8><<<grid, kRowBlock, 0, stream_>>>(v, a); break;
        case 16: row_bag_vec<K, 16><<<grid, kRowBlock, 0, stream_>>>(v, a); break;
        default: row_bag_vec<K, 32><<<grid, kRowBlock, 0, stream_>>>(v, a); break;
      }
    } else {
      row_bag_scalar<K><<<blocks_for(a.n_bags * 32, kRowBlock), kRowBlock, 0, stream_>>>(v, a);
    }
    EDO_CUDA(cudaGetLastError());
  }
  void launch(const BagArgs& a, std::int64_t) override {
    switch (kind_) {
      case RowKind::F32: return launch_kind<RowKind::F32>(a);
      case RowKind::F16: return launch_kind<RowKind::F16>(a);
      case RowKind::BF16: return launch_kind<RowKind::BF16>(a);
      case RowKind::FP8: return launch_kind<RowKind::FP8>(a);
      case RowKind::INT8: return launch_kind<RowKind::INT8>(a);
      case RowKind::INT4: return launch_kind<RowKind::INT4>(a);
    }
  }
  RowKind kind_;
  std::uint64_t row_bytes_;
  DeviceBuffer rows_buf_;
  float table_scale_ = 0.f;
};

}  // namespace

std::unique_ptr<DeviceTable> make_row_table(const EncodedTable& t) { return std::make_unique<RowTableImpl>(t); }

}  // namespace edo::kernels::cuda::detail
