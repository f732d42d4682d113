// The CUDA backend's host side: device status in words, device buffers, the DeviceTable base,
// uploads, host-array helpers, the anchors and the Backend that times lookups with events.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda/table_impl.cuh"

namespace edo::kernels::cuda {

namespace detail {
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}
}  // namespace detail

using detail::blocks_for;
using detail::check;

namespace {

__global__ void fill_nan_kernel(float* p, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    p[i] = __int_as_float(0x7fc00000);
}

__global__ void iota_kernel(std::int64_t* p, std::int64_t first, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = first + i;
}

// Why cudaGetDeviceCount() found nothing, in words a user can act on. The runtime reports a
// machine without any NVIDIA driver as "driver version is insufficient", which misleads: look
// for the driver library first.
std::string no_device_reason(cudaError_t e) {
  const int rt = CUDART_VERSION;
  char runtime[32];
  std::snprintf(runtime, sizeof runtime, "CUDA %d.%d", rt / 1000, rt % 1000 / 10);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (e == cudaErrorInsufficientDriver) {
    if (void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
      dlclose(h);
      return std::string("the NVIDIA driver on this machine is older than the ") + runtime + " runtime edo was built with; update the driver";
    }
    return "this machine has no NVIDIA driver (libcuda.so.1 not found), so no GPU can be used";
  }
  if (e == cudaErrorNoDevice || e == cudaSuccess) {
    if (visible && !*visible) return "CUDA_VISIBLE_DEVICES is set but empty, so no GPU is visible";
    return "the NVIDIA driver is installed but sees no GPU";
  }
  return std::string("the CUDA runtime cannot use a GPU: ") + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
}

float elapsed_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  EDO_CUDA(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

}  // namespace

// ---- status and properties -------------------------------------------------------------------
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

// ---- buffers -----------------------------------------------------------------------------------
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

// ---- the DeviceTable base ------------------------------------------------------------------------
namespace detail {

TableImpl::TableImpl(const EncodedTable& t) {
  rows_ = t.rows();
  dim_ = t.dim();
  EDO_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  EDO_CUDA(cudaMalloc(&err_, sizeof(ErrFlag)));
  EDO_CUDA(cudaMemset(err_, 0, sizeof(ErrFlag)));
}

TableImpl::~TableImpl() {
  cudaStreamSynchronize(stream_);
  cudaFree(err_);
  cudaStreamDestroy(stream_);
}

void TableImpl::synchronize() {
  EDO_CUDA(cudaStreamSynchronize(stream_));
  EDO_CUDA(cudaGetLastError());
  ErrFlag f{};
  EDO_CUDA(cudaMemcpy(&f, err_, sizeof f, cudaMemcpyDeviceToHost));
  if (f.set) {
    EDO_CUDA(cudaMemset(err_, 0, sizeof(ErrFlag)));
    throw IndexOutOfRange(f.index, f.position, rows_);
  }
}

void TableImpl::gather(const std::int64_t* idx, std::int64_t n, float* out) {
  if (n > 0) launch(args(idx, nullptr, n, nullptr, Pooling::Sum, out), n);
}

void TableImpl::bag(const std::int64_t* idx, std::int64_t n, const std::int64_t* offsets, std::int64_t n_bags, const float* psw, Pooling mode,
                    float* out) {
  if (n_bags > 0) launch(args(idx, offsets, n_bags, psw, mode, out), n);
}

void TableImpl::backward(const std::int64_t*, std::int64_t, const std::int64_t*, std::int64_t, const float*, Pooling, const float*, float) {
  throw std::logic_error("this strategy has no backward (fp32, fp16 and bf16 only)");
}

void TableImpl::download_rows(float* out) {
  DeviceBuffer idx(rows_ * 8), buf(rows_ * dim_ * 4);
  iota_kernel<<<blocks_for(static_cast<std::int64_t>(rows_), 256), 256, 0, stream_>>>(idx.as<std::int64_t>(), 0, static_cast<std::int64_t>(rows_));
  EDO_CUDA(cudaGetLastError());
  gather(idx.as<std::int64_t>(), static_cast<std::int64_t>(rows_), buf.as<float>());
  synchronize();
  buf.download(out, rows_ * dim_ * 4);
}

DeviceBuffer TableImpl::upload_array(const FormatData& f, const char* name) {
  const auto& arr = f.array(name);
  DeviceBuffer b(std::max<std::uint64_t>(arr.bytes, 16));
  if (arr.bytes) b.upload(arr.data, arr.bytes);
  return b;
}

}  // namespace detail

std::unique_ptr<DeviceTable> DeviceTable::upload(const EncodedTable& t) {
  const std::string st = device_status();
  if (!st.empty()) throw std::runtime_error(st);
  switch (t.format_data().kind) {
    case FormatKind::F32:
    case FormatKind::F16:
    case FormatKind::BF16:
    case FormatKind::FP8:
    case FormatKind::INT8:
    case FormatKind::INT4: return detail::make_row_table(t);
    case FormatKind::Offload: return detail::make_offload_table(t);
    default: return detail::make_generic_table(t);
  }
}

// ---- host-array helpers (tests) -----------------------------------------------------------------
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

// ---- anchors -------------------------------------------------------------------------------------
namespace {
// Median GB/s of `reps` timed copies on a stream of their own (one untimed first).
double time_copies(void* dst, const void* src, std::uint64_t bytes, cudaMemcpyKind kind, double counted_bytes, int reps) {
  cudaStream_t s{};
  cudaEvent_t e0{}, e1{};
  EDO_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  EDO_CUDA(cudaEventCreate(&e0));
  EDO_CUDA(cudaEventCreate(&e1));
  std::vector<double> gbs;
  EDO_CUDA(cudaMemcpyAsync(dst, src, bytes, kind, s));
  for (int r = 0; r < std::max(1, reps); ++r) {
    EDO_CUDA(cudaEventRecord(e0, s));
    EDO_CUDA(cudaMemcpyAsync(dst, src, bytes, kind, s));
    EDO_CUDA(cudaEventRecord(e1, s));
    EDO_CUDA(cudaEventSynchronize(e1));
    gbs.push_back(counted_bytes / (elapsed_ms(e0, e1) * 1e-3) / 1e9);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(s);
  std::sort(gbs.begin(), gbs.end());
  return gbs[gbs.size() / 2];
}
}  // namespace

double d2d_copy_gbs(std::uint64_t bytes, int reps) {
  DeviceBuffer a(bytes), b(bytes);
  EDO_CUDA(cudaMemset(a.get(), 1, bytes));
  EDO_CUDA(cudaMemset(b.get(), 0, bytes));
  return time_copies(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, 2.0 * static_cast<double>(bytes), reps);
}

double h2d_copy_gbs(std::uint64_t bytes, int reps) {
  DeviceBuffer d(bytes);
  void* h = nullptr;
  EDO_CUDA(cudaHostAlloc(&h, bytes, cudaHostAllocDefault));
  std::memset(h, 1, bytes);
  double g = 0;
  try {
    g = time_copies(d.get(), h, bytes, cudaMemcpyHostToDevice, static_cast<double>(bytes), reps);
  } catch (...) {
    cudaFreeHost(h);
    throw;
  }
  cudaFreeHost(h);
  return g;
}

// ---- the Backend ---------------------------------------------------------------------------------
namespace {

// A table and a workload on the device: batches, offsets and one output buffer uploaded and
// allocated once; a pass launches every batch on the table's stream between two events.
class CudaLoaded final : public LoadedTable {
 public:
  CudaLoaded(const EncodedTable& t, const Workload& w) : LoadedTable(w.indices()), table_(DeviceTable::upload(t)) {
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
    table_->reserve(static_cast<std::int64_t>(w.max_batch()));
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

}  // namespace edo::kernels::cuda
