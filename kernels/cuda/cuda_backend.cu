// CUDA backend: one kernel family per format, all built on the per-element math of
// kernels/formats (the same functions the CPU backend calls).
//
//  * row formats (fp32, fp16, bf16, fp8, int8, int4): a sub-warp of G lanes per bag (or per
//    gathered row); each lane owns 16-byte chunks of the row (4 fp32, 8 fp16/bf16, 16 fp8/int8,
//    32 int4 values), loads them with one 128-bit non-coherent load, dequantises in registers
//    and accumulates in fp32; the index loop is unrolled by 4 so that four rows are in flight
//    per lane. Rows whose size or dimension does not allow 16-byte chunks use a scalar path.
//  * PQ, multi-hash, QR, low-rank, pruned, offload: a warp per bag, lanes over columns, the
//    format's EDO_HD value function per element.
// Out-of-range indices set a device flag (first writer wins); the row reads as zeros and
// synchronize() throws IndexOutOfRange.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "edo/kernels/cuda.h"
#include "edo/kernels/lru.h"
#include "edo/kernels/formats/lowrank.h"
#include "edo/kernels/formats/multihash.h"
#include "edo/kernels/formats/offload.h"
#include "edo/kernels/formats/pq.h"
#include "edo/kernels/formats/pruned.h"
#include "edo/kernels/formats/qr.h"
#include "edo/kernels/formats/row_formats.h"

namespace edo::kernels::cuda {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}
#define EDO_CUDA(x) check((x), #x)

struct ErrFlag {
  unsigned int set;
  long long index;
  long long position;
};

__device__ __forceinline__ bool in_range(std::int64_t r, std::uint64_t rows, std::int64_t pos, ErrFlag* err) {
  if (static_cast<std::uint64_t>(r) < rows) return true;
  if (atomicCAS(&err->set, 0u, 1u) == 0u) {
    err->index = r;
    err->position = pos;
  }
  return false;
}

struct BagArgs {
  const std::int64_t* idx;
  const std::int64_t* offsets;  // nullptr: gather (bag i = index i)
  std::int64_t n_bags;
  const float* psw;
  int mean;
  float* out;
  std::uint32_t dim;
  std::uint64_t rows;
  ErrFlag* err;
};

__device__ __forceinline__ void bag_bounds(const BagArgs& a, std::int64_t b, std::int64_t& s, std::int64_t& e) {
  if (a.offsets) {
    s = a.offsets[b];
    e = a.offsets[b + 1];
  } else {
    s = b;
    e = b + 1;
  }
}

__device__ __forceinline__ uint4 load16(const std::uint8_t* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}

template <RowKind K> struct Epv;  // elements per 16-byte chunk
template <> struct Epv<RowKind::F32> { static constexpr int v = 4; };
template <> struct Epv<RowKind::F16> { static constexpr int v = 8; };
template <> struct Epv<RowKind::BF16> { static constexpr int v = 8; };
template <> struct Epv<RowKind::FP8> { static constexpr int v = 16; };
template <> struct Epv<RowKind::INT8> { static constexpr int v = 16; };
template <> struct Epv<RowKind::INT4> { static constexpr int v = 32; };

// Accumulate w * decode(chunk) into acc: the chunk's bytes are the row's bytes c*16..c*16+15,
// so element j of the chunk is row element c*EPV + j, decoded by the format's row_value().
template <RowKind K>
__device__ __forceinline__ void accumulate_chunk(const uint4& raw, RowParams p, float w, float* acc) {
  const std::uint8_t* bytes = reinterpret_cast<const std::uint8_t*>(&raw);
#pragma unroll
  for (int j = 0; j < Epv<K>::v; ++j) acc[j] = fma_f(w, row_value<K>(bytes, static_cast<std::uint32_t>(j), p), acc[j]);
}

// Vector path: G lanes per bag, lane l owns chunks l, l+G, ...
template <RowKind K, int G>
__global__ void row_bag_vec(RowView v, BagArgs a) {
  constexpr int EPV = Epv<K>::v;
  const int lane = threadIdx.x % G;
  const std::int64_t bag = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / G;
  if (bag >= a.n_bags) return;
  std::int64_t s, e;
  bag_bounds(a, bag, s, e);
  const std::uint32_t chunks = v.dim / EPV;
  for (std::uint32_t c = lane; c < chunks; c += G) {
    float acc[EPV];
#pragma unroll
    for (int j = 0; j < EPV; ++j) acc[j] = 0.f;
    std::int64_t p = s;
    for (; p + 4 <= e; p += 4) {
      uint4 raw[4];
      RowParams rp[4];
      float w[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const std::int64_t r = a.idx[p + u];
        w[u] = a.psw ? a.psw[p + u] : 1.f;
        if (in_range(r, a.rows, p + u, a.err)) {
          const std::uint8_t* row = v.base + static_cast<std::uint64_t>(r) * v.row_bytes;
          raw[u] = load16(row + c * 16u);
          rp[u] = row_params<K>(row, v.dim, v.table_scale);
        } else {
          raw[u] = make_uint4(0, 0, 0, 0);
          rp[u] = RowParams{0.f, 0.f};
          w[u] = 0.f;
        }
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) accumulate_chunk<K>(raw[u], rp[u], w[u], acc);
    }
    for (; p < e; ++p) {
      const std::int64_t r = a.idx[p];
      if (!in_range(r, a.rows, p, a.err)) continue;
      const std::uint8_t* row = v.base + static_cast<std::uint64_t>(r) * v.row_bytes;
      accumulate_chunk<K>(load16(row + c * 16u), row_params<K>(row, v.dim, v.table_scale), a.psw ? a.psw[p] : 1.f, acc);
    }
    const float scale = (a.mean && e > s) ? 1.f / static_cast<float>(e - s) : 1.f;
    float4* o = reinterpret_cast<float4*>(a.out + static_cast<std::uint64_t>(bag) * v.dim + c * EPV);
#pragma unroll
    for (int j = 0; j < EPV; j += 4) o[j / 4] = make_float4(acc[j] * scale, acc[j + 1] * scale, acc[j + 2] * scale, acc[j + 3] * scale);
  }
}

// Scalar path (any dim / row size): a warp per bag, lanes over columns.
template <RowKind K>
__global__ void row_bag_scalar(RowView v, BagArgs a) {
  const int lane = threadIdx.x % 32;
  const std::int64_t bag = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (bag >= a.n_bags) return;
  std::int64_t s, e;
  bag_bounds(a, bag, s, e);
  for (std::uint32_t d = lane; d < v.dim; d += 32) {
    float acc = 0.f;
    for (std::int64_t p = s; p < e; ++p) {
      const std::int64_t r = a.idx[p];
      if (!in_range(r, a.rows, p, a.err)) continue;
      const std::uint8_t* row = v.base + static_cast<std::uint64_t>(r) * v.row_bytes;
      acc = fma_f(a.psw ? a.psw[p] : 1.f, row_value<K>(row, d, row_params<K>(row, v.dim, v.table_scale)), acc);
    }
    const float scale = (a.mean && e > s) ? 1.f / static_cast<float>(e - s) : 1.f;
    a.out[static_cast<std::uint64_t>(bag) * v.dim + d] = acc * scale;
  }
}

// Element-wise formats: F(view, row, d) -> value.
struct PqF {
  PqView v;
  __device__ float operator()(std::int64_t r, std::uint32_t d) const { return pq_value(v, r, d); }
};
struct HashF {
  MultiHashView v;
  __device__ float operator()(std::int64_t r, std::uint32_t d) const { return multihash_value(v, r, d); }
};
struct QrF {
  QrView v;
  __device__ float operator()(std::int64_t r, std::uint32_t d) const { return qr_value(v, r, d); }
};
struct LowRankF {
  LowRankView v;
  __device__ float operator()(std::int64_t r, std::uint32_t d) const { return lowrank_value(v, r, d); }
};
struct PrunedF {
  PrunedView v;
  __device__ float operator()(std::int64_t r, std::uint32_t d) const { return pruned_value(v, r, d); }
};
struct OffloadF {
  OffloadView v;
  __device__ float operator()(std::int64_t r, std::uint32_t d) const { return offload_value(v, r, d); }
};

template <class F>
__global__ void element_bag(F f, BagArgs a) {
  const int lane = threadIdx.x % 32;
  const std::int64_t bag = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (bag >= a.n_bags) return;
  std::int64_t s, e;
  bag_bounds(a, bag, s, e);
  for (std::uint32_t d0 = 0; d0 < a.dim; d0 += 128) {  // 4 columns per lane per pass
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (std::int64_t p = s; p < e; ++p) {
      const std::int64_t r = a.idx[p];
      if (!in_range(r, a.rows, p, a.err)) continue;
      const float w = a.psw ? a.psw[p] : 1.f;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const std::uint32_t d = d0 + lane + 32u * j;
        if (d < a.dim) acc[j] = fma_f(w, f(r, d), acc[j]);
      }
    }
    const float scale = (a.mean && e > s) ? 1.f / static_cast<float>(e - s) : 1.f;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const std::uint32_t d = d0 + lane + 32u * j;
      if (d < a.dim) a.out[static_cast<std::uint64_t>(bag) * a.dim + d] = acc[j] * scale;
    }
  }
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
  const float inv = (a.mean && e > s) ? 1.f / static_cast<float>(e - s) : 1.f;
  for (std::int64_t p = s; p < e; ++p) {
    const std::int64_t r = a.idx[p];
    if (!in_range(r, a.rows, p, a.err)) continue;
    const float w = (a.psw ? a.psw[p] : 1.f) * inv * lr;
    std::uint8_t* row = const_cast<std::uint8_t*>(v.base) + static_cast<std::uint64_t>(r) * v.row_bytes;
    for (std::uint32_t d = lane; d < v.dim; d += 32) atomic_sub_elem<K>(row, d, w * grad[static_cast<std::uint64_t>(bag) * v.dim + d]);
  }
}

__global__ void fill_nan_kernel(float* p, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    p[i] = __int_as_float(0x7fc00000);
}

__global__ void iota_kernel(std::int64_t* p, std::int64_t first, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = first + i;
}

// LRU: copy staged rows into their cache slots; write the changed entries of the slot map.
__global__ void lru_fill_kernel(float* cache, const std::int32_t* slots, const float* staged, std::int64_t n, std::uint32_t dim) {
  const std::int64_t i = blockIdx.x;
  if (i >= n) return;
  for (std::uint32_t d = threadIdx.x; d < dim; d += blockDim.x)
    cache[static_cast<std::uint64_t>(slots[i]) * dim + d] = staged[static_cast<std::uint64_t>(i) * dim + d];
}
__global__ void scatter_slots_kernel(std::int32_t* slot_of_row, const std::int64_t* rows, const std::int32_t* vals, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) slot_of_row[rows[i]] = vals[i];
}

int blocks_for(std::int64_t items, int per_block) { return static_cast<int>((items + per_block - 1) / per_block); }

// ---- tables -------------------------------------------------------------------------------

class TableImpl : public DeviceTable {
 public:
  explicit TableImpl(const EncodedTable& t) {
    rows_ = t.rows();
    dim_ = t.dim();
    EDO_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    EDO_CUDA(cudaMalloc(&err_, sizeof(ErrFlag)));
    EDO_CUDA(cudaMemset(err_, 0, sizeof(ErrFlag)));
  }
  ~TableImpl() override {
    cudaFree(err_);
    cudaStreamDestroy(stream_);
  }
  void synchronize() override {
    EDO_CUDA(cudaStreamSynchronize(stream_));
    EDO_CUDA(cudaGetLastError());
    ErrFlag f{};
    EDO_CUDA(cudaMemcpy(&f, err_, sizeof f, cudaMemcpyDeviceToHost));
    if (f.set) {
      EDO_CUDA(cudaMemset(err_, 0, sizeof(ErrFlag)));
      throw IndexOutOfRange(f.index, f.position, rows_);
    }
  }
  void gather(const std::int64_t* idx, std::int64_t n, float* out) override {
    if (n > 0) launch(args(idx, nullptr, n, nullptr, Pooling::Sum, out));
  }
  void bag(const std::int64_t* idx, std::int64_t, const std::int64_t* offsets, std::int64_t n_bags, const float* psw, Pooling mode,
           float* out) override {
    if (n_bags > 0) launch(args(idx, offsets, n_bags, psw, mode, out));
  }
  void backward(const std::int64_t*, std::int64_t, const std::int64_t*, std::int64_t, const float*, Pooling, const float*, float) override {
    throw std::logic_error("this strategy has no backward");
  }
  void* stream() const override { return stream_; }
  void download_rows(float* out) override {
    DeviceBuffer idx(rows_ * 8), buf(rows_ * dim_ * 4);
    iota_kernel<<<blocks_for(static_cast<std::int64_t>(rows_), 256), 256, 0, stream_>>>(idx.as<std::int64_t>(), 0, static_cast<std::int64_t>(rows_));
    gather(idx.as<std::int64_t>(), static_cast<std::int64_t>(rows_), buf.as<float>());
    synchronize();
    buf.download(out, rows_ * dim_ * 4);
  }

 protected:
  BagArgs args(const std::int64_t* idx, const std::int64_t* offsets, std::int64_t n_bags, const float* psw, Pooling mode, float* out) const {
    return BagArgs{idx, offsets, n_bags, psw, mode == Pooling::Mean ? 1 : 0, out, dim_, rows_, err_};
  }
  virtual void launch(const BagArgs& a) = 0;
  DeviceBuffer upload_array(const FormatData& f, const char* name) {
    const auto& arr = f.array(name);
    DeviceBuffer b(std::max<std::uint64_t>(arr.bytes, 16));
    if (arr.bytes) b.upload(arr.data, arr.bytes);
    return b;
  }
  cudaStream_t stream_{};
  ErrFlag* err_ = nullptr;
};

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
    constexpr int EPV = Epv<K>::v;
    const RowView v = view();
    const bool vec = row_bytes_ % 16 == 0 && dim_ % EPV == 0;
    if (vec) {
      const std::uint32_t chunks = dim_ / EPV;
      int g = 1;
      while (g < static_cast<int>(chunks) && g < 32) g *= 2;
      const int grid = blocks_for(a.n_bags * g, 256);
      switch (g) {
        case 1: row_bag_vec<K, 1><<<grid, 256, 0, stream_>>>(v, a); break;
        case 2: row_bag_vec<K, 2><<<grid, 256, 0, stream_>>>(v, a); break;
        case 4: row_bag_vec<K, 4><<<grid, 256, 0, stream_>>>(v, a); break;
        case 8: row_bag_vec<K, 8><<<grid, 256, 0, stream_>>>(v, a); break;
        case 16: row_bag_vec<K, 16><<<grid, 256, 0, stream_>>>(v, a); break;
        default: row_bag_vec<K, 32><<<grid, 256, 0, stream_>>>(v, a); break;
      }
    } else {
      row_bag_scalar<K><<<blocks_for(a.n_bags * 32, 256), 256, 0, stream_>>>(v, a);
    }
    EDO_CUDA(cudaGetLastError());
  }
  void launch(const BagArgs& a) override {
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

template <class F>
void launch_element(const F& f, const BagArgs& a, cudaStream_t s) {
  element_bag<F><<<blocks_for(a.n_bags * 32, 256), 256, 0, s>>>(f, a);
  EDO_CUDA(cudaGetLastError());
}

class GenericTableImpl final : public TableImpl {
 public:
  explicit GenericTableImpl(const EncodedTable& t) : TableImpl(t), f_(t.format_data()) {
    for (const auto& arr : f_.arrays) bufs_.push_back(upload_array(f_, arr.name.c_str()));
  }

 private:
  template <class T>
  const T* dev(const char* name) const {
    for (std::size_t i = 0; i < f_.arrays.size(); ++i)
      if (f_.arrays[i].name == name) return bufs_[i].as<T>();
    throw std::logic_error(std::string("no device array ") + name);
  }
  void launch(const BagArgs& a) override {
    const std::uint32_t D = dim_;
    switch (f_.kind) {
      case FormatKind::PQ:
        return launch_element(PqF{PqView{dev<std::uint8_t>("codes"), dev<float>("codebook"), D, static_cast<std::uint32_t>(f_.scalar("m")),
                                         static_cast<std::uint32_t>(f_.scalar("dsub")), static_cast<std::uint32_t>(f_.scalar("k"))}},
                              a, stream_);
      case FormatKind::MultiHash:
        return launch_element(HashF{MultiHashView{dev<float>("table"), static_cast<std::uint64_t>(f_.scalar("buckets")),
                                                  static_cast<std::uint64_t>(f_.scalar("seed")), D, static_cast<std::uint32_t>(f_.scalar("k")),
                                                  static_cast<std::uint32_t>(f_.scalar("width")), static_cast<HashMode>(static_cast<int>(f_.scalar("mode")))}},
                              a, stream_);
      case FormatKind::QR:
        return launch_element(QrF{QrView{dev<float>("q"), dev<float>("r"), static_cast<std::uint64_t>(f_.scalar("m")), D,
                                         static_cast<QrOp>(static_cast<int>(f_.scalar("op")))}},
                              a, stream_);
      case FormatKind::LowRank:
        return launch_element(LowRankF{LowRankView{dev<float>("a"), dev<float>("b"), static_cast<std::uint32_t>(f_.scalar("rank")), D}}, a, stream_);
      case FormatKind::Pruned:
        return launch_element(PrunedF{PrunedView{dev<std::int32_t>("remap"), dev<float>("rows"), dev<float>("default"), D}}, a, stream_);
      default: throw std::logic_error("unsupported format for the generic CUDA table");
    }
  }
  FormatData f_;
  std::vector<DeviceBuffer> bufs_;
};

// Offload: host rows in pinned (mapped) or managed memory, device cache + slot map.
class OffloadTableImpl final : public TableImpl {
 public:
  explicit OffloadTableImpl(const EncodedTable& t) : TableImpl(t) {
    const FormatData f = t.format_data();
    cache_rows_ = static_cast<std::uint64_t>(f.scalar("cache_rows"));
    lru_ = f.scalar("lru") != 0;
    managed_ = f.scalar("managed") != 0;
    const auto& host = f.array("host");
    if (managed_) {
      EDO_CUDA(cudaMallocManaged(&host_, host.bytes));
      std::memcpy(host_, host.data, host.bytes);
      int dev = 0;
      EDO_CUDA(cudaGetDevice(&dev));
      cudaMemLocation loc{};
      loc.type = cudaMemLocationTypeHost;
      cudaMemAdvise(host_, host.bytes, cudaMemAdviseSetPreferredLocation, loc);  // advisory
      cudaMemLocation dloc{};
      dloc.type = cudaMemLocationTypeDevice;
      dloc.id = dev;
      cudaMemAdvise(host_, host.bytes, cudaMemAdviseSetAccessedBy, dloc);
      host_dev_ = static_cast<float*>(host_);
    } else {
      EDO_CUDA(cudaHostAlloc(&host_, host.bytes, cudaHostAllocMapped));
      std::memcpy(host_, host.data, host.bytes);
      void* d = nullptr;
      EDO_CUDA(cudaHostGetDevicePointer(&d, host_, 0));
      host_dev_ = static_cast<float*>(d);
    }
    cache_ = DeviceBuffer(std::max<std::uint64_t>(cache_rows_ * dim_ * 4, 16));
    slot_ = DeviceBuffer(rows_ * 4);
    if (lru_) {
      slot_host_.assign(rows_, -1);
      slot_.upload(slot_host_.data(), rows_ * 4);
      lru_state_ = std::make_unique<LruCache>(cache_rows_, slot_host_.data());
    } else {
      if (cache_rows_) cache_.upload(f.array("cache").data, cache_rows_ * dim_ * 4);
      slot_.upload(f.array("slot").data, rows_ * 4);
      slot_host_.assign(static_cast<const std::int32_t*>(f.array("slot").data), static_cast<const std::int32_t*>(f.array("slot").data) + rows_);
    }
  }
  ~OffloadTableImpl() override {
    if (managed_) cudaFree(host_);
    else cudaFreeHost(host_);
  }
  double hit_rate() override { return accesses_ ? static_cast<double>(hits_) / static_cast<double>(accesses_) : 0.0; }
  void reset_stats() override { hits_ = accesses_ = 0; }
  void gather(const std::int64_t* idx, std::int64_t n, float* out) override {
    TableImpl::gather(idx, n, out);
    after(idx, n);
  }
  void bag(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags, const float* psw, Pooling mode,
           float* out) override {
    TableImpl::bag(idx, n, offsets, n_bags, psw, mode, out);
    after(idx, n);
  }

 private:
  void launch(const BagArgs& a) override {
    launch_element(OffloadF{OffloadView{slot_.as<std::int32_t>(), cache_.as<float>(), host_dev_, dim_}}, a, stream_);
  }
  // Hit accounting (host mirror of the slot map) and, for LRU, the batch's cache fills.
  void after(const std::int64_t* d_idx, std::int64_t n) {
    if (n <= 0) return;
    idx_host_.resize(static_cast<std::size_t>(n));
    EDO_CUDA(cudaMemcpyAsync(idx_host_.data(), d_idx, static_cast<std::size_t>(n) * 8, cudaMemcpyDeviceToHost, stream_));
    EDO_CUDA(cudaStreamSynchronize(stream_));
    for (auto r : idx_host_)
      if (static_cast<std::uint64_t>(r) >= rows_) return;  // reported by synchronize()
    accesses_ += static_cast<std::uint64_t>(n);
    if (!lru_) {
      for (auto r : idx_host_) hits_ += slot_host_[r] >= 0 ? 1 : 0;
      return;
    }
    fills_.clear();
    hits_ += lru_state_->access(idx_host_.data(), n, fills_);
    if (fills_.empty()) return;
    // Rows whose slot changed: every filled row and every row that owned a filled slot before
    // the batch. Slots filled several times keep their last row.
    owner_.resize(cache_rows_, -1);
    mark_.resize(cache_rows_, 0);
    ++stamp_;
    std::vector<std::int64_t> changed;
    std::vector<std::int32_t> filled;
    for (const auto& f : fills_) {
      changed.push_back(f.row);
      if (mark_[f.slot] != stamp_) {
        mark_[f.slot] = stamp_;
        filled.push_back(f.slot);
        if (owner_[f.slot] >= 0) changed.push_back(owner_[f.slot]);
      }
    }
    for (const auto& f : fills_) owner_[f.slot] = f.row;  // final owners
    std::vector<std::int32_t> vals(changed.size());
    for (std::size_t i = 0; i < changed.size(); ++i) vals[i] = slot_host_[changed[i]];
    std::vector<float> staged(filled.size() * dim_);
    for (std::size_t i = 0; i < filled.size(); ++i)
      std::memcpy(staged.data() + i * dim_, static_cast<const float*>(host_) + static_cast<std::uint64_t>(owner_[filled[i]]) * dim_, dim_ * 4);
    const auto nf = static_cast<std::int64_t>(filled.size()), nc = static_cast<std::int64_t>(changed.size());
    DeviceBuffer dslots(nf * 4), dstaged(staged.size() * 4), drows(nc * 8), dvals(nc * 4);
    dslots.upload(filled.data(), nf * 4);
    dstaged.upload(staged.data(), staged.size() * 4);
    drows.upload(changed.data(), nc * 8);
    dvals.upload(vals.data(), nc * 4);
    lru_fill_kernel<<<static_cast<unsigned>(nf), 128, 0, stream_>>>(cache_.as<float>(), dslots.as<std::int32_t>(), dstaged.as<float>(), nf, dim_);
    scatter_slots_kernel<<<blocks_for(nc, 256), 256, 0, stream_>>>(slot_.as<std::int32_t>(), drows.as<std::int64_t>(), dvals.as<std::int32_t>(), nc);
    EDO_CUDA(cudaGetLastError());
    EDO_CUDA(cudaStreamSynchronize(stream_));
  }

  std::uint64_t cache_rows_ = 0;
  bool lru_ = false, managed_ = false;
  void* host_ = nullptr;
  float* host_dev_ = nullptr;
  DeviceBuffer cache_, slot_;
  std::vector<std::int32_t> slot_host_;
  std::unique_ptr<LruCache> lru_state_;
  std::vector<LruCache::Fill> fills_;
  std::vector<std::int64_t> idx_host_, owner_;
  std::vector<std::uint32_t> mark_;
  std::uint32_t stamp_ = 0;
  std::uint64_t hits_ = 0, accesses_ = 0;
};

}  // namespace

// ---- public API -----------------------------------------------------------------------------
// Why cudaGetDeviceCount() found nothing, in words a user can act on. The runtime reports a
// machine without any NVIDIA driver as "driver version is insufficient", which misleads: look
// for the driver library first.
namespace {
std::string no_device_reason(cudaError_t e) {
  const int rt = CUDART_VERSION;
  char runtime[32];
  std::snprintf(runtime, sizeof runtime, "CUDA %d.%d", rt / 1000, rt % 1000 / 10);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (e == cudaErrorInsufficientDriver) {
    if (void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
      dlclose(h);
      return std::string("the NVIDIA driver on this machine is older than the ") + runtime +
             " runtime edo was built with; update the driver";
    }
    return "this machine has no NVIDIA driver (libcuda.so.1 not found), so no GPU can be used";
  }
  if (e == cudaErrorNoDevice || e == cudaSuccess) {
    if (visible && !*visible) return "CUDA_VISIBLE_DEVICES is set but empty, so no GPU is visible";
    return "the NVIDIA driver is installed but sees no GPU";
  }
  return std::string("the CUDA runtime cannot use a GPU: ") + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
}
}  // namespace

std::string device_status() {
  static const std::string s = [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0) return std::string();
    cudaGetLastError();
    return std::string("no CUDA device: ") + no_device_reason(e);
  }();
  return s;
}

DeviceInfo device_info() {
  const std::string st = device_status();
  if (!st.empty()) throw std::runtime_error(st);
  DeviceInfo d;
  int dev = 0, v = 0;
  EDO_CUDA(cudaGetDevice(&dev));
  EDO_CUDA(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev));
  EDO_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, dev));  // kHz
  d.clock_ghz = v * 1e-6;
  EDO_CUDA(cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, dev));
  d.l2_bytes = static_cast<std::uint64_t>(v);
  EDO_CUDA(cudaDeviceGetAttribute(&d.cc_major, cudaDevAttrComputeCapabilityMajor, dev));
  EDO_CUDA(cudaDeviceGetAttribute(&d.cc_minor, cudaDevAttrComputeCapabilityMinor, dev));
  std::size_t free_b = 0, total_b = 0;
  EDO_CUDA(cudaMemGetInfo(&free_b, &total_b));
  d.memory_bytes = total_b;
  return d;
}

std::string device_description() {
  const std::string st = device_status();
  if (!st.empty()) return st;
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return "CUDA device 0";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s, %d SMs, %.0f GiB, sm_%d%d", p.name, p.multiProcessorCount,
                static_cast<double>(p.totalGlobalMem) / (1ull << 30), p.major, p.minor);
  return buf;
}

DeviceBuffer::DeviceBuffer(std::uint64_t bytes) : n_(bytes) {
  const std::string st = device_status();
  if (!st.empty()) throw std::runtime_error(st);
  if (bytes) EDO_CUDA(cudaMalloc(&p_, bytes));
}
DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) {
  o.p_ = nullptr;
  o.n_ = 0;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = o.p_;
    n_ = o.n_;
    o.p_ = nullptr;
    o.n_ = 0;
  }
  return *this;
}
void DeviceBuffer::upload(const void* host, std::uint64_t bytes) {
  if (bytes) EDO_CUDA(cudaMemcpy(p_, host, bytes, cudaMemcpyHostToDevice));
}
void DeviceBuffer::download(void* host, std::uint64_t bytes) const {
  if (bytes) EDO_CUDA(cudaMemcpy(host, p_, bytes, cudaMemcpyDeviceToHost));
}
void DeviceBuffer::fill_nan() {
  if (n_ >= 4) {
    const auto blocks = static_cast<unsigned>(std::min<std::uint64_t>(1024, (n_ / 4 + 255) / 256));
    fill_nan_kernel<<<blocks, 256>>>(as<float>(), n_ / 4);
    EDO_CUDA(cudaGetLastError());
    EDO_CUDA(cudaDeviceSynchronize());
  }
}

std::unique_ptr<DeviceTable> DeviceTable::upload(const EncodedTable& t) {
  const std::string st = device_status();
  if (!st.empty()) throw std::runtime_error(st);
  switch (t.format_data().kind) {
    case FormatKind::F32:
    case FormatKind::F16:
    case FormatKind::BF16:
    case FormatKind::FP8:
    case FormatKind::INT8:
    case FormatKind::INT4: return std::make_unique<RowTableImpl>(t);
    case FormatKind::Offload: return std::make_unique<OffloadTableImpl>(t);
    default: return std::make_unique<GenericTableImpl>(t);
  }
}

void gather_host(DeviceTable& t, const std::int64_t* idx, std::int64_t n, float* out) {
  if (n <= 0) return;
  DeviceBuffer di(n * 8), dout(n * t.dim() * 4);
  dout.fill_nan();
  di.upload(idx, n * 8);
  t.gather(di.as<std::int64_t>(), n, dout.as<float>());
  t.synchronize();
  dout.download(out, n * t.dim() * 4);
}

void bag_host(DeviceTable& t, const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags, const float* psw,
              Pooling mode, float* out) {
  check_offsets(offsets, n_bags, n);
  if (n_bags <= 0) return;
  DeviceBuffer di(std::max<std::int64_t>(n, 1) * 8), doff((n_bags + 1) * 8), dw(psw ? std::max<std::int64_t>(n, 1) * 4 : 0),
      dout(n_bags * t.dim() * 4);
  dout.fill_nan();
  if (n) di.upload(idx, n * 8);
  doff.upload(offsets, (n_bags + 1) * 8);
  if (psw && n) dw.upload(psw, n * 4);
  t.bag(di.as<std::int64_t>(), n, doff.as<std::int64_t>(), n_bags, psw ? dw.as<float>() : nullptr, mode, dout.as<float>());
  t.synchronize();
  dout.download(out, n_bags * t.dim() * 4);
}

double d2d_copy_gbs(std::uint64_t bytes, int reps) {
  DeviceBuffer a(bytes), b(bytes);
  EDO_CUDA(cudaMemset(a.get(), 1, bytes));
  EDO_CUDA(cudaMemset(b.get(), 0, bytes));
  cudaEvent_t e0, e1;
  EDO_CUDA(cudaEventCreate(&e0));
  EDO_CUDA(cudaEventCreate(&e1));
  EDO_CUDA(cudaMemcpy(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice));  // warm-up
  std::vector<double> gbs;
  for (int r = 0; r < reps; ++r) {
    EDO_CUDA(cudaEventRecord(e0));
    EDO_CUDA(cudaMemcpy(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice));
    EDO_CUDA(cudaEventRecord(e1));
    EDO_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    EDO_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    gbs.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(gbs.begin(), gbs.end());
  return gbs[gbs.size() / 2];
}

namespace {
float elapsed_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  EDO_CUDA(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

// A table and a workload on the device: batches, offsets and one output buffer uploaded and
// allocated once; a pass launches every batch on the table's stream between two events.
class CudaLoaded final : public LoadedTable {
 public:
  CudaLoaded(const EncodedTable& t, const Workload& w) : table_(DeviceTable::upload(t)) {
    w.check();
    for (std::size_t i = 0; i < w.batches.size(); ++i) {
      const auto& b = w.batches[i];
      check_indices(b.data(), static_cast<std::int64_t>(b.size()), t.rows());
      batches_.emplace_back(b.size() * 8);
      batches_.back().upload(b.data(), b.size() * 8);
      sizes_.push_back(static_cast<std::int64_t>(b.size()));
      offsets_.emplace_back(w.offsets[i].size() * 8);
      offsets_.back().upload(w.offsets[i].data(), w.offsets[i].size() * 8);
      bags_.push_back(static_cast<std::int64_t>(w.offsets[i].size()) - 1);
    }
    out_ = DeviceBuffer(std::max<std::uint64_t>(16, w.max_batch() * t.dim() * 4));
    EDO_CUDA(cudaEventCreate(&e0_));
    EDO_CUDA(cudaEventCreate(&e1_));
  }
  ~CudaLoaded() override {
    cudaEventDestroy(e0_);
    cudaEventDestroy(e1_);
  }
  double pass(bool bag) override {
    auto s = static_cast<cudaStream_t>(table_->stream());
    EDO_CUDA(cudaEventRecord(e0_, s));
    for (std::size_t i = 0; i < batches_.size(); ++i) {
      if (bag)
        table_->bag(batches_[i].as<std::int64_t>(), sizes_[i], offsets_[i].as<std::int64_t>(), bags_[i], nullptr, Pooling::Sum, out_.as<float>());
      else
        table_->gather(batches_[i].as<std::int64_t>(), sizes_[i], out_.as<float>());
    }
    EDO_CUDA(cudaEventRecord(e1_, s));
    table_->synchronize();
    return elapsed_ms(e0_, e1_) * 1e-3;
  }
  double hit_rate() const override { return table_->hit_rate(); }
  void reset_stats() override { table_->reset_stats(); }

 private:
  std::unique_ptr<DeviceTable> table_;
  std::vector<DeviceBuffer> batches_, offsets_;
  std::vector<std::int64_t> sizes_, bags_;
  DeviceBuffer out_;
  cudaEvent_t e0_{}, e1_{};
};

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  std::string description() const override { return device_description(); }
  std::unique_ptr<LoadedTable> load(const EncodedTable& table, const Workload& work) override {
    return std::make_unique<CudaLoaded>(table, work);
  }
};
}  // namespace

std::unique_ptr<Backend> make_cuda_backend() {
  const std::string st = device_status();
  if (!st.empty()) throw std::runtime_error(st);
  return std::make_unique<CudaBackend>();
}

double h2d_copy_gbs(std::uint64_t bytes, int reps) {
  DeviceBuffer d(bytes);
  void* h = nullptr;
  EDO_CUDA(cudaHostAlloc(&h, bytes, cudaHostAllocDefault));
  std::memset(h, 1, bytes);
  cudaStream_t s{};
  cudaEvent_t e0{}, e1{};
  EDO_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  EDO_CUDA(cudaEventCreate(&e0));
  EDO_CUDA(cudaEventCreate(&e1));
  std::vector<double> gbs;
  EDO_CUDA(cudaMemcpyAsync(d.get(), h, bytes, cudaMemcpyHostToDevice, s));  // warm-up
  for (int r = 0; r < reps; ++r) {
    EDO_CUDA(cudaEventRecord(e0, s));
    EDO_CUDA(cudaMemcpyAsync(d.get(), h, bytes, cudaMemcpyHostToDevice, s));
    EDO_CUDA(cudaEventRecord(e1, s));
    EDO_CUDA(cudaEventSynchronize(e1));
    gbs.push_back(static_cast<double>(bytes) / (elapsed_ms(e0, e1) * 1e-3) / 1e9);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(s);
  cudaFreeHost(h);
  std::sort(gbs.begin(), gbs.end());
  return gbs[gbs.size() / 2];
}

}  // namespace edo::kernels::cuda
