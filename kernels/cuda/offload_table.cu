// Offload on the GPU (issue 10, item 3): the fp32 table stays in host memory, pinned and mapped
// (or managed, preferred on the host and accessed by the device), and the lookup kernel reads
// the rows that are not cached straight from there over the host link; a cache of hot rows
// lives in device memory and is looked up on the device. Nothing is allocated, copied back or
// waited for per batch: hit statistics are device counters read only when asked for.
//
//   policy=static  a row -> slot map (V int32) chosen at encode time from the access counts;
//                  the lookup reads slot[row], then the cache row or the host row.
//   policy=lru     edo/kernels/lru.h's set-associative batch LRU, as kernels on the table's
//                  stream before each lookup (offload_rows.h: probe, sort, insert, fill), then
//                  the lookup searches the row's set again (cache row or host row). Workspace:
//                  32 B per index of the largest batch (two key arrays for the sort, the fills)
//                  plus the sort's temporary storage, allocated by reserve() (or by a batch
//                  larger than any before).
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstring>

#include "cuda/offload_rows.h"
#include "cuda/table_impl.cuh"
#include "cuda/warp_bag.cuh"

namespace edo::kernels::cuda::detail {
namespace {

__global__ void lru_probe(const std::int64_t* idx, std::int64_t n, std::uint64_t rows, std::int64_t* tag, std::uint32_t* time,
                          std::uint64_t sets, std::uint32_t ways, std::uint32_t now, std::uint64_t* keys, Counters* c) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) lru_probe_thread(i, idx, rows, tag, time, sets, ways, now, keys, c);
}

// One thread per sorted key; the first key of each set does the set's work.
__global__ void lru_insert(const std::uint64_t* keys, std::int64_t n, std::int64_t* tag, std::uint32_t* time, std::uint32_t ways,
                           std::uint32_t now, Fill* fills, Counters* c) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) lru_insert_thread(i, keys, n, tag, time, ways, now, fills, c);
}

// A warp per inserted row (the count is on the device: grid-stride up to it).
__global__ void lru_fill(const Fill* fills, const Counters* c, float* cache, const float* host, std::uint32_t dim) {
  const unsigned int n = c->fill_count;
  for (unsigned int f = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; f < n; f += (gridDim.x * blockDim.x) >> 5)
    lru_fill_lane(f, static_cast<int>(threadIdx.x & 31), fills, cache, host, dim);
}

__global__ void count_fills(Counters* c) { c->fills += c->fill_count; }

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
      cudaGetLastError();  // an advice the platform does not support is not an error
      host_dev_ = static_cast<float*>(host_);
    } else {
      EDO_CUDA(cudaHostAlloc(&host_, host.bytes, cudaHostAllocMapped));
      std::memcpy(host_, host.data, host.bytes);
      void* d = nullptr;
      EDO_CUDA(cudaHostGetDevicePointer(&d, host_, 0));
      host_dev_ = static_cast<float*>(d);
    }
    cache_ = DeviceBuffer(std::max<std::uint64_t>(cache_rows_ * dim_ * 4, 16));
    if (cache_rows_) cache_.upload(f.array("cache").data, cache_rows_ * dim_ * 4);
    if (lru_) {
      sets_ = static_cast<std::uint64_t>(f.scalar("sets"));
      ways_ = static_cast<std::uint32_t>(f.scalar("ways"));
      now_ = static_cast<std::uint32_t>(f.scalar("batches"));
      tag_ = upload_array(f, "tag");
      time_ = upload_array(f, "time");
      key_bits_ = lru_key_bits(sets_);
    } else {
      slot_ = upload_array(f, "slot");
    }
    counters_ = DeviceBuffer(sizeof(Counters));
    EDO_CUDA(cudaMemset(counters_.get(), 0, sizeof(Counters)));
  }
  ~OffloadTableImpl() override {
    cudaStreamSynchronize(stream_);
    if (managed_) cudaFree(host_);
    else cudaFreeHost(host_);
  }
  double hit_rate() override {
    Counters c{};
    EDO_CUDA(cudaStreamSynchronize(stream_));
    counters_.download(&c, sizeof c);
    return c.accesses ? static_cast<double>(c.hits) / static_cast<double>(c.accesses) : 0.0;
  }
  void reset_stats() override { EDO_CUDA(cudaMemsetAsync(counters_.get(), 0, sizeof(Counters), stream_)); }
  void reserve(std::int64_t n) override {
    if (!lru_ || n <= capacity_) return;
    EDO_CUDA(cudaStreamSynchronize(stream_));  // the old workspace may be in use
    keys_in_ = DeviceBuffer(static_cast<std::uint64_t>(n) * 8);
    keys_out_ = DeviceBuffer(static_cast<std::uint64_t>(n) * 8);
    fills_ = DeviceBuffer(static_cast<std::uint64_t>(n) * sizeof(Fill));
    std::size_t temp = 0;
    EDO_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, temp, keys_in_.as<std::uint64_t>(), keys_out_.as<std::uint64_t>(), static_cast<int>(n), 0,
                                            key_bits_, stream_));
    temp_ = DeviceBuffer(std::max<std::size_t>(temp, 16));
    temp_bytes_ = temp;
    capacity_ = n;
  }

 private:
  void launch(const BagArgs& a, std::int64_t n) override {
    if (lru_) {
      lru_batch(a.idx, n);
      run(LruF{tag_.as<std::int64_t>(), sets_, ways_, cache_.as<float>(), host_dev_, dim_}, a);
    } else {
      run(StaticF{slot_.as<std::int32_t>(), cache_.as<float>(), host_dev_, dim_, counters_.as<Counters>()}, a);
    }
  }
  template <class F>
  void run(F f, const BagArgs& a) {
    const int grid = warp_bag_grid(a.n_bags, 1 << 30);
    if (dim_ % 4 == 0) warp_bag<F, true><<<grid, kWarpBagThreads, 0, stream_>>>(f, a);
    else warp_bag<F, false><<<grid, kWarpBagThreads, 0, stream_>>>(f, a);
    EDO_CUDA(cudaGetLastError());
  }
  void lru_batch(const std::int64_t* idx, std::int64_t n) {
    ++now_;
    if (sets_ == 0 || n <= 0) return;
    if (n > static_cast<std::int64_t>(0x7fffffff)) throw std::invalid_argument("offload: batches above 2^31-1 indices are not supported");
    reserve(n);
    auto* c = counters_.as<Counters>();
    EDO_CUDA(cudaMemsetAsync(keys_in_.get(), 0xff, static_cast<std::size_t>(n) * 8, stream_));
    EDO_CUDA(cudaMemsetAsync(&c->misses, 0, 8, stream_));  // misses and fill_count
    lru_probe<<<blocks_for(n, 256), 256, 0, stream_>>>(idx, n, rows_, tag_.as<std::int64_t>(), time_.as<std::uint32_t>(), sets_, ways_, now_,
                                                        keys_in_.as<std::uint64_t>(), c);
    EDO_CUDA(cudaGetLastError());
    std::size_t temp = temp_bytes_;
    EDO_CUDA(cub::DeviceRadixSort::SortKeys(temp_.get(), temp, keys_in_.as<std::uint64_t>(), keys_out_.as<std::uint64_t>(), static_cast<int>(n), 0,
                                            key_bits_, stream_));
    lru_insert<<<blocks_for(n, 256), 256, 0, stream_>>>(keys_out_.as<std::uint64_t>(), n, tag_.as<std::int64_t>(), time_.as<std::uint32_t>(),
                                                         ways_, now_, fills_.as<Fill>(), c);
    EDO_CUDA(cudaGetLastError());
    lru_fill<<<std::max(1, std::min(1024, blocks_for(n * 32, 256))), 256, 0, stream_>>>(fills_.as<Fill>(), c, cache_.as<float>(), host_dev_, dim_);
    count_fills<<<1, 1, 0, stream_>>>(c);
    EDO_CUDA(cudaGetLastError());
  }

  std::uint64_t cache_rows_ = 0, sets_ = 0;
  std::uint32_t ways_ = 0, now_ = 0;
  int key_bits_ = 33;  // the sort looks at the row (32 bits) and the set: lru_key_bits()
  bool lru_ = false, managed_ = false;
  void* host_ = nullptr;
  float* host_dev_ = nullptr;
  DeviceBuffer cache_, slot_, tag_, time_, counters_;
  DeviceBuffer keys_in_, keys_out_, fills_, temp_;
  std::size_t temp_bytes_ = 0;
  std::int64_t capacity_ = 0;
};

}  // namespace

std::unique_ptr<DeviceTable> make_offload_table(const EncodedTable& t) { return std::make_unique<OffloadTableImpl>(t); }

}  // namespace edo::kernels::cuda::detail
