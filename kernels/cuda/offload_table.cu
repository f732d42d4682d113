// Offload on the GPU (issue 10, item 3): the fp32 table stays in host memory, pinned and mapped
// (or managed, preferred on the host and accessed by the device), and the lookup kernel reads
// the rows that are not cached straight from there over the host link; a cache of hot rows
// lives in device memory and is looked up on the device. Nothing is allocated, copied back or
// waited for per batch: hit statistics are device counters read only when asked for.
//
//   policy=static  a row -> slot map (V int32) chosen at encode time from the access counts;
//                  the lookup reads slot[row], then the cache row or the host row.
//   policy=lru     edo/kernels/lru.h's set-associative batch LRU, as kernels on the table's
//                  stream before each lookup:
//                    probe    per access: search the row's set; a hit marks its slot with the
//                             batch number and counts; a miss appends (set << 32 | row)
//                    sort     cub radix sort of the batch's miss keys (sentinels for the rest)
//                    insert   per set, its distinct misses in row order take the slots the batch
//                             has not used, least recently used first (ties: lower way)
//                    fill     copies each inserted row from host memory into its slot
//                  then the lookup searches the set again (cache row or host row). Workspace:
//                  16 B per index of the largest batch plus the sort's temporary storage,
//                  allocated by reserve() (or by a batch larger than any before).
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstring>

#include "cuda/table_impl.cuh"
#include "cuda/warp_bag.cuh"
#include "edo/kernels/formats/offload.h"

namespace edo::kernels::cuda::detail {
namespace {

struct Counters {
  unsigned long long hits, accesses, fills;
  unsigned int misses;  // this batch's miss keys (probe)
  unsigned int fill_count;  // this batch's fills (insert)
};

// Warp-aggregated counting from divergent code: one atomic per group of active lanes.
__device__ __forceinline__ void count_active(unsigned long long* hits, unsigned long long* accesses, bool hit) {
  const unsigned int act = __activemask();
  const unsigned int h = __ballot_sync(act, hit);
  if ((threadIdx.x & 31) == __ffs(act) - 1) {
    atomicAdd(hits, static_cast<unsigned long long>(__popc(h)));
    atomicAdd(accesses, static_cast<unsigned long long>(__popc(act)));
  }
}

// ---- static --------------------------------------------------------------------------------------
struct StaticF {
  const std::int32_t* slot;
  const float* cache;
  const float* host;
  std::uint32_t dim;
  Counters* counters;
  struct Meta {
    const float* row;
  };
  __device__ void block_init() {}
  __device__ Meta meta(std::int64_t row, int, bool first) const {
    const std::int32_t s = __ldg(slot + row);
    if (first) count_active(&counters->hits, &counters->accesses, s >= 0);
    return {s >= 0 ? cache + static_cast<std::uint64_t>(s) * dim : host + static_cast<std::uint64_t>(row) * dim};
  }
  // Host rows are read with plain loads: they are not read-only cacheable on every platform.
  using Col = std::uint32_t;
  __device__ Col column(std::uint32_t col) const { return col; }
  __device__ float4 load4(const Meta& m, std::uint32_t col) const { return *reinterpret_cast<const float4*>(m.row + col); }
  __device__ float load1(const Meta& m, std::uint32_t col) const { return m.row[col]; }
};

// ---- LRU -----------------------------------------------------------------------------------------
struct LruF {
  const std::int64_t* tag;
  std::uint64_t sets;
  std::uint32_t ways;
  const float* cache;
  const float* host;
  std::uint32_t dim;
  struct Meta {
    const float* row;
  };
  __device__ void block_init() {}
  __device__ Meta meta(std::int64_t row, int, bool) const {
    const std::int64_t s = sets ? lru_find(tag, sets, ways, row) : -1;
    return {s >= 0 ? cache + static_cast<std::uint64_t>(s) * dim : host + static_cast<std::uint64_t>(row) * dim};
  }
  using Col = std::uint32_t;
  __device__ Col column(std::uint32_t col) const { return col; }
  __device__ float4 load4(const Meta& m, std::uint32_t col) const { return *reinterpret_cast<const float4*>(m.row + col); }
  __device__ float load1(const Meta& m, std::uint32_t col) const { return m.row[col]; }
};

constexpr std::uint64_t kNoKey = ~0ull;

__global__ void lru_probe(const std::int64_t* idx, std::int64_t n, std::uint64_t rows, std::int64_t* tag, std::uint32_t* time,
                          std::uint64_t sets, std::uint32_t ways, std::uint32_t now, std::uint64_t* keys, Counters* c) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const std::int64_t r = idx[i];
  if (static_cast<std::uint64_t>(r) >= rows) return;  // the lookup kernel reports it
  const std::int64_t s = lru_find(tag, sets, ways, r);
  if (s >= 0) time[s] = now;  // every writer writes the same value
  else keys[atomicAdd(&c->misses, 1u)] = lru_set_of(r, sets) << 32 | static_cast<std::uint64_t>(r);
  count_active(&c->hits, &c->accesses, s >= 0);
}

struct Fill {
  std::int64_t row;
  std::int64_t slot;
};

// One thread per set that has misses (the first sorted key of the set): the policy's step 2.
__global__ void lru_insert(const std::uint64_t* keys, std::int64_t n, std::int64_t* tag, std::uint32_t* time, std::uint32_t ways,
                           std::uint32_t now, Fill* fills, Counters* c) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const std::uint64_t key = keys[i];
  if (key == kNoKey) return;
  const std::uint64_t set = key >> 32;
  if (i > 0 && keys[i - 1] >> 32 == set) return;  // not the set's first miss
  const std::uint64_t base = set * ways;
  std::uint32_t order[kLruWays], free = 0;
  for (std::uint32_t w = 0; w < ways; ++w) {
    if (time[base + w] >= now) continue;  // used by this batch
    // insertion by (time, way): ways arrive in increasing order, so ties keep the lower way first
    std::uint32_t at = free++;
    while (at > 0 && time[base + order[at - 1]] > time[base + w]) {
      order[at] = order[at - 1];
      --at;
    }
    order[at] = w;
  }
  std::uint32_t used = 0;
  for (std::int64_t j = i; j < n && keys[j] >> 32 == set && used < free; ++j) {
    if (j > i && keys[j] == keys[j - 1]) continue;  // the same row missed again
    const std::uint64_t slot = base + order[used++];
    const auto row = static_cast<std::int64_t>(keys[j] & 0xffffffffu);
    tag[slot] = row;
    time[slot] = now;
    fills[atomicAdd(&c->fill_count, 1u)] = Fill{row, static_cast<std::int64_t>(slot)};
  }
}

// A warp per inserted row: host row -> cache slot.
__global__ void lru_fill(const Fill* fills, const Counters* c, float* cache, const float* host, std::uint32_t dim) {
  const int lane = threadIdx.x & 31;
  const unsigned int n = c->fill_count;
  for (unsigned int f = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; f < n; f += (gridDim.x * blockDim.x) >> 5) {
    const float* src = host + static_cast<std::uint64_t>(fills[f].row) * dim;
    float* dst = cache + static_cast<std::uint64_t>(fills[f].slot) * dim;
    if (dim % 4 == 0) {
      for (std::uint32_t d = 4u * lane; d < dim; d += 128) *reinterpret_cast<float4*>(dst + d) = *reinterpret_cast<const float4*>(src + d);
    } else {
      for (std::uint32_t d = lane; d < dim; d += 32) dst[d] = src[d];
    }
  }
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
      while ((std::uint64_t{1} << (key_bits_ - 32)) <= sets_) ++key_bits_;
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
  int key_bits_ = 33;  // the sort looks at the row (32 bits) and the set
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
