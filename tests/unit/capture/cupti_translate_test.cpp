// The CUPTI translation, fed hand-built CUPTI callback data, *_params structs and activity
// records from the real CUDA 13 headers (no GPU, no CUPTI library needed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "cupti_translate.h"

using namespace edo::capture;

namespace {

struct Cb {
  CUpti_CallbackData data{};
  int runtime_rv = 0;
  CUresult driver_rv = CUDA_SUCCESS;
};

CuptiTranslator::Output call(CuptiTranslator& t, CUpti_CallbackDomain dom, CUpti_CallbackId id, const void* params,
                             CUpti_ApiCallbackSite site, int rv = 0, const char* symbol = nullptr, uint32_t corr = 1) {
  CUpti_CallbackData d{};
  d.callbackSite = site;
  d.functionParams = params;
  int rrv = rv;
  CUresult drv = static_cast<CUresult>(rv);
  d.functionReturnValue = dom == CUPTI_CB_DOMAIN_RUNTIME_API ? static_cast<void*>(&rrv) : static_cast<void*>(&drv);
  d.symbolName = symbol;
  d.correlationId = corr;
  return t.on_callback(dom, id, &d);
}

// A runtime API call: ENTER then EXIT (optionally with driver calls in between).
CuptiTranslator::Output runtime(CuptiTranslator& t, CUpti_CallbackId id, const void* params, int rv = 0) {
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, id, params, CUPTI_API_ENTER);
  return call(t, CUPTI_CB_DOMAIN_RUNTIME_API, id, params, CUPTI_API_EXIT, rv);
}
CuptiTranslator::Output driver(CuptiTranslator& t, CUpti_CallbackId id, const void* params, int rv = 0,
                               const char* symbol = nullptr) {
  call(t, CUPTI_CB_DOMAIN_DRIVER_API, id, params, CUPTI_API_ENTER, 0, symbol);
  return call(t, CUPTI_CB_DOMAIN_DRIVER_API, id, params, CUPTI_API_EXIT, rv, symbol);
}
CuptiTranslator::Output driver(CuptiTranslator& t, CUpti_CallbackId id, const void* params, const char* symbol) {
  return driver(t, id, params, 0, symbol);
}

void* P(uint64_t v) { return reinterpret_cast<void*>(v); }

}  // namespace

TEST(CuptiTranslate, CudaMallocAndFree) {
  CuptiTranslator t;
  MemoryTracker m;
  void* ptr = P(0x7f0000000000);
  cudaMalloc_v3020_params a{&ptr, 4096};
  auto out = runtime(t, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &a);
  ASSERT_EQ(out.mem.size(), 1u);
  EXPECT_EQ(out.mem[0].kind, MemOp::kAlloc);
  EXPECT_EQ(out.mem[0].address, 0x7f0000000000u);
  EXPECT_EQ(out.mem[0].bytes, 4096u);
  EXPECT_EQ(out.mem[0].api, "cudaMalloc");
  EXPECT_EQ(m.apply(out.mem[0]), 4096);
  cudaFree_v3020_params f{ptr};
  out = runtime(t, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &f);
  ASSERT_EQ(out.mem.size(), 1u);
  EXPECT_EQ(out.mem[0].kind, MemOp::kFree);
  EXPECT_EQ(m.apply(out.mem[0]), -4096);  // the size comes from the tracker
  EXPECT_EQ(m.live_bytes(), 0);
  EXPECT_EQ(m.peak_bytes(), 4096);
}

TEST(CuptiTranslate, FailedCallsRecordNothing) {
  CuptiTranslator t;
  void* ptr = P(0x1000);
  cudaMalloc_v3020_params a{&ptr, 4096};
  EXPECT_TRUE(runtime(t, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &a, 2 /* cudaErrorMemoryAllocation */).mem.empty());
  CUdeviceptr d = 0x2000;
  cuMemAlloc_v2_params b{&d, 64};
  EXPECT_TRUE(driver(t, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &b, CUDA_ERROR_OUT_OF_MEMORY).mem.empty());
}

TEST(CuptiTranslate, DriverCallsInsideARuntimeCallAreNotCountedTwice) {
  CuptiTranslator t;
  void* ptr = P(0x5000);
  CUdeviceptr d = 0x5000;
  cudaMalloc_v3020_params a{&ptr, 512};
  cuMemAlloc_v2_params b{&d, 512};
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &a, CUPTI_API_ENTER);
  EXPECT_TRUE(driver(t, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &b).mem.empty());
  auto out = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &a, CUPTI_API_EXIT);
  ASSERT_EQ(out.mem.size(), 1u);
  EXPECT_EQ(out.mem[0].api, "cudaMalloc");
  // Outside a runtime call the driver call is traced.
  auto direct = driver(t, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &b);
  ASSERT_EQ(direct.mem.size(), 1u);
  EXPECT_EQ(direct.mem[0].api, "cuMemAlloc");
}

TEST(CuptiTranslate, AsyncAndPoolAllocations) {
  CuptiTranslator t;
  MemoryTracker m;
  void* ptr = P(0xA000);
  cudaStream_t s = reinterpret_cast<cudaStream_t>(0x77);
  cudaMallocAsync_v11020_params a{&ptr, 1000, s};
  auto out = runtime(t, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, &a);
  ASSERT_EQ(out.mem.size(), 1u);
  EXPECT_EQ(out.mem[0].api, "cudaMallocAsync");
  EXPECT_EQ(out.mem[0].stream, 0x77u);
  EXPECT_EQ(m.apply(out.mem[0]), 1000);
  void* ptr2 = P(0xB000);
  cudaMallocFromPoolAsync_v11020_params p{&ptr2, 300, nullptr, s};
  out = runtime(t, CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020, &p);
  ASSERT_EQ(out.mem.size(), 1u);
  EXPECT_EQ(out.mem[0].api, "cudaMallocFromPoolAsync");
  EXPECT_EQ(m.apply(out.mem[0]), 300);
  cudaFreeAsync_v11020_params f{ptr, s};
  out = runtime(t, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, &f);
  ASSERT_EQ(out.mem.size(), 1u);
  EXPECT_EQ(m.apply(out.mem[0]), -1000);
  EXPECT_EQ(m.peak_bytes(), 1300);
  EXPECT_EQ(m.live_bytes(), 300);
}

TEST(CuptiTranslate, DriverAllocations) {
  CuptiTranslator t;
  MemoryTracker m;
  CUdeviceptr d = 0xC000;
  cuMemAlloc_v2_params a{&d, 2048};
  auto out = driver(t, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &a);
  ASSERT_EQ(out.mem.size(), 1u);
  EXPECT_EQ(m.apply(out.mem[0]), 2048);
  CUdeviceptr d2 = 0xD000;
  cuMemAllocAsync_params b{&d2, 128, reinterpret_cast<CUstream>(0x9)};
  out = driver(t, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, &b);
  ASSERT_EQ(out.mem.size(), 1u);
  EXPECT_EQ(out.mem[0].api, "cuMemAllocAsync");
  EXPECT_EQ(out.mem[0].stream, 0x9u);
  cuMemFree_v2_params f{d};
  out = driver(t, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &f);
  ASSERT_EQ(out.mem.size(), 1u);
  EXPECT_EQ(m.apply(out.mem[0]), -2048);
  // A free of an address never seen is ignored by the tracker.
  cuMemFree_v2_params g{0xDEAD0000};
  out = driver(t, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &g);
  EXPECT_EQ(m.apply(out.mem[0]), 0);
}

TEST(CuptiTranslate, VirtualMemoryCreateMapUnmap) {
  CuptiTranslator t;
  MemoryTracker m;
  CUmemGenericAllocationHandle h = 42;
  cuMemCreate_params c{&h, 1 << 21, nullptr, 0};
  EXPECT_TRUE(driver(t, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &c).mem.empty());  // no address yet
  cuMemMap_params mp{0x40000000, 1 << 21, 0, h, 0};
  auto out = driver(t, CUPTI_DRIVER_TRACE_CBID_cuMemMap, &mp);
  ASSERT_EQ(out.mem.size(), 1u);
  EXPECT_EQ(out.mem[0].api, "cuMemMap");
  EXPECT_EQ(m.apply(out.mem[0]), 1 << 21);
  cuMemUnmap_params um{0x40000000, 1 << 20};  // partial unmap
  out = driver(t, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &um);
  ASSERT_EQ(out.mem.size(), 1u);
  EXPECT_EQ(m.apply(out.mem[0]), -(1 << 20));
  EXPECT_EQ(m.live_bytes(), 1 << 20);
  cuMemUnmap_params rest{0x40000000 + (1 << 20), 1 << 20};
  out = driver(t, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &rest);
  EXPECT_EQ(m.apply(out.mem[0]), -(1 << 20));
  EXPECT_EQ(m.live_bytes(), 0);
}

namespace {
// Fake parameter layouts, by kernel handle. Every handle asked for is remembered: a runtime
// launch's host-side entry function must never be (only the driver can describe kernels, and it only
// knows CUfunction / CUkernel handles).
std::map<const void*, ParamLayout> g_layouts;
std::vector<std::pair<const void*, KernelHandle>> g_asked;
std::shared_ptr<const ParamLayout> fake_layout(const void* h, KernelHandle kind) {
  g_asked.emplace_back(h, kind);
  auto it = g_layouts.find(h);
  if (it == g_layouts.end()) return nullptr;
  return std::make_shared<const ParamLayout>(it->second);
}
bool asked_for(const void* h) {
  return std::any_of(g_asked.begin(), g_asked.end(), [&](const auto& a) { return a.first == h; });
}
const char* kMangled = "_Z10emb_lookupPKfPKli";
}  // namespace

TEST(CuptiTranslate, RuntimeLaunchReadsItsArgumentsFromTheDriverLaunchItGoesThrough) {
  const void* host_fn = P(0x401000);
  CUfunction f = reinterpret_cast<CUfunction>(P(0x9100));
  g_layouts[f] = {{0, 8}, {8, 8}, {16, 4}};
  g_asked.clear();
  CuptiTranslator t(fake_layout);
  uint64_t weights = 0x7f0000000100, idx = 0x7f0000900000;
  int n = 64;
  void* args[] = {&weights, &idx, &n};
  cudaLaunchKernel_v7000_params p{host_fn, dim3(4), dim3(128), args, 0, reinterpret_cast<cudaStream_t>(0x5)};
  auto out = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, CUPTI_API_ENTER, 0, kMangled, 9);
  EXPECT_FALSE(out.launch) << "reported at EXIT, once it is known to have succeeded";
  cuLaunchKernel_params d{f, 4, 1, 1, 128, 1, 1, 0, reinterpret_cast<CUstream>(0x5), args, nullptr};
  out = call(t, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d, CUPTI_API_ENTER, 0, kMangled, 10);
  EXPECT_FALSE(out.launch);
  out = call(t, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d, CUPTI_API_EXIT, 0, kMangled, 10);
  EXPECT_FALSE(out.launch) << "the driver launch of a runtime launch is not a second launch";
  out = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, CUPTI_API_EXIT, 0, kMangled, 9);
  ASSERT_NE(out.launch, nullptr);
  EXPECT_EQ(out.launch->name, "emb_lookup(float const*, long const*, int)");
  EXPECT_EQ(out.launch->stream, 0x5u);
  EXPECT_EQ(out.launch->correlation, 9u);
  EXPECT_EQ(out.launch->driver_correlation, 10u);
  EXPECT_TRUE(out.launch->args_read);
  EXPECT_EQ(out.launch->pointers, (std::vector<uint64_t>{weights, idx}));
  EXPECT_FALSE(asked_for(host_fn)) << "the runtime's host-side entry function was given to the layout query";
  edo::wire::AddressIndex::Builder b;
  b.add(0x7f0000000000, 1 << 20, "emb.user");
  b.add(0x7f0000200000, 1 << 20, "emb.item");
  const edo::wire::AddressIndex tables = std::move(b).build();
  EXPECT_EQ(tables_of_launch(*out.launch, tables), std::vector<std::string>{"emb.user"});
}

TEST(CuptiTranslate, FailedLaunchesAreNotCounted) {
  CUfunction f = reinterpret_cast<CUfunction>(P(0x9200));
  g_layouts[f] = {{0, 8}};
  CuptiTranslator t(fake_layout);
  uint64_t w = 0x1234000;
  void* args[] = {&w};
  cudaLaunchKernel_v7000_params p{P(0x401100), dim3(1), dim3(1), args, 0, nullptr};
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, CUPTI_API_ENTER, 0, kMangled);
  auto out = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, CUPTI_API_EXIT,
                  98 /* cudaErrorInvalidDeviceFunction */, kMangled);
  EXPECT_FALSE(out.launch);
  cuLaunchKernel_params d{f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr};
  call(t, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d, CUPTI_API_ENTER, 0, "k");
  out = call(t, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d, CUPTI_API_EXIT,
             CUDA_ERROR_INVALID_VALUE, "k");
  EXPECT_FALSE(out.launch);
  // The thread's launch bookkeeping is clean afterwards: the next launch is reported normally.
  call(t, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d, CUPTI_API_ENTER, 0, "k");
  out = call(t, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d, CUPTI_API_EXIT, 0, "k");
  ASSERT_TRUE(out.launch);
  EXPECT_EQ(out.launch->pointers, std::vector<uint64_t>{w});
}

TEST(CuptiTranslate, Cuda13TripleChevronLaunchWithoutADriverCallbackUsesItsCUkernel) {
  // nvcc 13 compiles kernel<<<...>>>() into __cudaLaunchKernel(cudaKernel_t, ...); a
  // cudaKernel_t is a CUkernel, which the driver can describe.
  const void* kernel = P(0x9300);
  g_layouts[kernel] = {{0, 8}, {8, 4}};
  g_asked.clear();
  CuptiTranslator t(fake_layout);
  uint64_t w = 0x5550000;
  int n = 3;
  void* args[] = {&w, &n};
  cudaLaunchKernel_v7000_params p{kernel, dim3(1), dim3(1), args, 0, reinterpret_cast<cudaStream_t>(0x7)};
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &p, CUPTI_API_ENTER, 0, kMangled);
  auto out = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &p, CUPTI_API_EXIT, 0, kMangled);
  ASSERT_TRUE(out.launch);
  EXPECT_EQ(out.launch->pointers, std::vector<uint64_t>{w});
  EXPECT_EQ(out.launch->stream, 0x7u);
  ASSERT_EQ(g_asked.size(), 1u);
  EXPECT_EQ(g_asked[0].second, KernelHandle::kKernel);
}

TEST(CuptiTranslate, ALaunchWithoutSymbolNameIsNamedByTheDriver) {
  const void* kernel = P(0x9500);
  g_layouts[kernel] = {};
  CuptiTranslator t(fake_layout, [](const void* h, KernelHandle kind) {
    return h == P(0x9500) && kind == KernelHandle::kKernel ? std::string(kMangled) : std::string();
  });
  void* args[] = {nullptr};
  cudaLaunchKernel_v7000_params p{kernel, dim3(1), dim3(1), args, 0, nullptr};
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &p, CUPTI_API_ENTER);
  auto out = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &p, CUPTI_API_EXIT);
  ASSERT_TRUE(out.launch);
  EXPECT_EQ(out.launch->name, "emb_lookup(float const*, long const*, int)");
}

TEST(CuptiTranslate, LaunchExAndPerThreadStreamVariants) {
  CUfunction f = reinterpret_cast<CUfunction>(P(0x9400));
  g_layouts[f] = {{0, 8}};
  CuptiTranslator t(fake_layout);
  uint64_t w = 0x1234000;
  void* args[] = {&w};
  cudaLaunchConfig_t cfg{};
  cfg.stream = reinterpret_cast<cudaStream_t>(0x33);
  cudaLaunchKernelExC_v11060_params p{&cfg, P(0x402000), args};
  CUlaunchConfig lc{};
  lc.hStream = reinterpret_cast<CUstream>(0x33);
  cuLaunchKernelEx_params d{&lc, f, args, nullptr};
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060, &p, CUPTI_API_ENTER, 0, "plain_kernel");
  call(t, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, &d, CUPTI_API_ENTER, 0, "plain_kernel");
  call(t, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, &d, CUPTI_API_EXIT, 0, "plain_kernel");
  auto out = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060, &p, CUPTI_API_EXIT, 0, "plain_kernel");
  ASSERT_NE(out.launch, nullptr);
  EXPECT_EQ(out.launch->name, "plain_kernel");
  EXPECT_EQ(out.launch->stream, 0x33u);
  EXPECT_EQ(out.launch->pointers, std::vector<uint64_t>{w});
}

TEST(CuptiTranslate, DriverLaunchWithKernelParamsAndWithPackedExtra) {
  CUfunction f = reinterpret_cast<CUfunction>(P(0x9000));
  g_layouts[f] = {{0, 8}, {8, 4}, {16, 8}};
  CuptiTranslator t(fake_layout);
  uint64_t a = 0xAAAA000, c = 0xCCCC000;
  int b = 7;
  void* kp[] = {&a, &b, &c};
  cuLaunchKernel_params p{f, 1, 1, 1, 32, 1, 1, 0, reinterpret_cast<CUstream>(0x44), kp, nullptr};
  auto out = driver(t, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, "triton_emb");
  ASSERT_NE(out.launch, nullptr);
  EXPECT_EQ(out.launch->pointers, (std::vector<uint64_t>{a, c}));
  EXPECT_EQ(out.launch->stream, 0x44u);
  EXPECT_EQ(out.launch->name, "triton_emb");
  // Same arguments as one packed buffer.
  alignas(8) unsigned char buf[24] = {};
  std::memcpy(buf, &a, 8);
  std::memcpy(buf + 8, &b, 4);
  std::memcpy(buf + 16, &c, 8);
  size_t size = sizeof buf;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  cuLaunchKernel_params q{f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, extra};
  out = driver(t, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &q, "triton_emb");
  ASSERT_NE(out.launch, nullptr);
  EXPECT_EQ(out.launch->pointers, (std::vector<uint64_t>{a, c}));
  // cuLaunchKernelEx and the cooperative launch
  CUlaunchConfig lc{};
  lc.hStream = reinterpret_cast<CUstream>(0x55);
  cuLaunchKernelEx_params e{&lc, f, kp, nullptr};
  out = driver(t, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, &e, "k");
  ASSERT_NE(out.launch, nullptr);
  EXPECT_EQ(out.launch->stream, 0x55u);
  EXPECT_EQ(out.launch->pointers.size(), 2u);
  cuLaunchCooperativeKernel_params co{f, 1, 1, 1, 32, 1, 1, 0, reinterpret_cast<CUstream>(0x66), kp};
  out = driver(t, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, &co, "coop");
  ASSERT_NE(out.launch, nullptr);
  EXPECT_EQ(out.launch->stream, 0x66u);
  EXPECT_EQ(out.launch->pointers.size(), 2u);
}

// PyTorch passes tensors inside structs: cuda::detail::TensorInfo (data pointer, sizes,
// strides, dims) for index_select / embedding, at::detail::Array<char*, N> for elementwise
// kernels. Every 8-byte word of a parameter is a candidate, and words that cannot be an
// address (sizes, strides, floats) are left out.
TEST(CuptiTranslate, PointersInsideStructArgumentsAreFound) {
  struct TensorInfo {
    uint64_t data;
    int64_t sizes[4];
    int64_t strides[4];
    int32_t dims;
  };
  static_assert(sizeof(TensorInfo) == 80);
  struct Array3 {
    uint64_t ptrs[3];
  };
  CUfunction f = reinterpret_cast<CUfunction>(P(0x9600));
  g_layouts[f] = {{0, 80}, {80, 80}, {160, 24}, {184, 4}, {192, 8}};
  CuptiTranslator t(fake_layout);
  // Zeroed first: the 4 padding bytes after `dims` would otherwise hold whatever the stack had
  // (a real launch's padding too, which is why words that look like addresses are only looked up).
  TensorInfo dst, src;
  std::memset(&dst, 0, sizeof dst);
  std::memset(&src, 0, sizeof src);
  auto fill = [](TensorInfo& t, uint64_t data, int64_t rows) {
    t.data = data;
    t.sizes[0] = rows, t.sizes[1] = 16, t.sizes[2] = t.sizes[3] = 1;
    t.strides[0] = 16, t.strides[1] = t.strides[2] = t.strides[3] = 1;
    t.dims = 2;
  };
  fill(dst, 0x7f0000800000, 64);
  fill(src, 0x7f0000000400, 1000);  // row 16 of emb.user
  Array3 arr{{0x7f0000900000, 0, 0x7f0000200040}};                      // into emb.item
  int32_t dim = 0;
  float scale[2] = {1.0f, 0.5f};  // an 8-byte parameter that is not a pointer
  void* kp[] = {&dst, &src, &arr, &dim, scale};
  cuLaunchKernel_params p{f, 1, 1, 1, 32, 1, 1, 0, nullptr, kp, nullptr};
  auto out = driver(t, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, "indexSelectLargeIndex");
  ASSERT_NE(out.launch, nullptr);
  EXPECT_TRUE(out.launch->args_read);
  EXPECT_EQ(out.launch->pointers,
            (std::vector<uint64_t>{0x7f0000800000, 0x7f0000000400, 0x7f0000900000, 0x7f0000200040}));
  edo::wire::AddressIndex::Builder b;
  b.add(0x7f0000000000, 1 << 20, "emb.user");
  b.add(0x7f0000200000, 1 << 20, "emb.item");
  const edo::wire::AddressIndex tables = std::move(b).build();
  EXPECT_EQ(tables_of_launch(*out.launch, tables), (std::vector<std::string>{"emb.item", "emb.user"}));
  // The same through a packed buffer (Triton, `extra`).
  alignas(8) unsigned char buf[200] = {};
  std::memcpy(buf, &dst, 80);
  std::memcpy(buf + 80, &src, 80);
  std::memcpy(buf + 160, &arr, 24);
  std::memcpy(buf + 192, scale, 8);
  size_t size = sizeof buf;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  cuLaunchKernel_params q{f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, extra};
  out = driver(t, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &q, "indexSelectLargeIndex");
  ASSERT_NE(out.launch, nullptr);
  EXPECT_EQ(tables_of_launch(*out.launch, tables), (std::vector<std::string>{"emb.item", "emb.user"}));
}

TEST(CuptiTranslate, LaunchWithoutParamInfoStillGivesTheName) {
  CuptiTranslator t;  // no cuFuncGetParamInfo (old driver)
  uint64_t w = 1, ix = 2;
  int n = 3;
  void* args[] = {&w, &ix, &n};  // one entry per parameter, as a real launch passes them
  cudaLaunchKernel_v7000_params p{P(0x1), dim3(1), dim3(1), args, 0, nullptr};
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, CUPTI_API_ENTER, 0, kMangled);
  auto out = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, CUPTI_API_EXIT, 0, kMangled);
  ASSERT_NE(out.launch, nullptr);
  EXPECT_EQ(out.launch->name, "emb_lookup(float const*, long const*, int)");
  EXPECT_TRUE(out.launch->pointers.empty()) << "1 and 2 are no device addresses";
  EXPECT_TRUE(out.launch->args_read) << "the mangled name gives the parameters (issue 21.2)";
}

TEST(CuptiTranslate, KernelActivityRecordGivesNameAndDuration) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = kMangled;
  k.start = 1000;
  k.end = 251000;
  k.correlationId = 9;
  auto kt = CuptiTranslator::kernel_time(reinterpret_cast<CUpti_Activity*>(&k));
  ASSERT_TRUE(kt.has_value());
  EXPECT_EQ(kt->name, "emb_lookup(float const*, long const*, int)");
  EXPECT_EQ(kt->ns, 250000u);
  EXPECT_EQ(kt->correlation, 9u);
  CUpti_ActivityMemory4 other{};
  other.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  EXPECT_FALSE(CuptiTranslator::kernel_time(reinterpret_cast<CUpti_Activity*>(&other)).has_value());
}

TEST(CuptiTranslate, Memory2RecordsForDeviceMemory) {
  CUpti_ActivityMemory4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.address = 0xE000;
  m.bytes = 4096;
  m.deviceId = 1;
  m.streamId = 7;
  m.correlationId = 3;
  auto op = CuptiTranslator::memory_record(reinterpret_cast<CUpti_Activity*>(&m));
  ASSERT_TRUE(op.has_value());
  EXPECT_EQ(op->kind, MemOp::kAlloc);
  EXPECT_EQ(op->bytes, 4096u);
  EXPECT_EQ(op->device, 1);
  EXPECT_EQ(op->api, "MEMORY2");
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  m.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  op = CuptiTranslator::memory_record(reinterpret_cast<CUpti_Activity*>(&m));
  ASSERT_TRUE(op.has_value());
  EXPECT_EQ(op->kind, MemOp::kFree);
  EXPECT_EQ(op->api, "MEMORY2:pool");
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;  // host memory: not a device allocation
  EXPECT_FALSE(CuptiTranslator::memory_record(reinterpret_cast<CUpti_Activity*>(&m)).has_value());
}

TEST(CuptiTranslate, TrackerTimelineAndPeak) {
  MemoryTracker m;
  MemOp a{MemOp::kAlloc, 0x100, 100, 0, 0, "cudaMalloc", 0};
  MemOp b{MemOp::kAlloc, 0x200, 50, 0, 0, "cudaMalloc", 0};
  MemOp fa{MemOp::kFree, 0x100, 0, 0, 0, "cudaFree", 0};
  MemOp c{MemOp::kAlloc, 0x300, 30, 0, 0, "cudaMalloc", 0};
  EXPECT_EQ(m.apply(a), 100);
  EXPECT_EQ(m.apply(a), 0);  // duplicate report of a live address
  EXPECT_EQ(m.apply(b), 50);
  EXPECT_EQ(m.apply(fa), -100);
  EXPECT_EQ(m.apply(fa), 0);  // double free / unknown
  EXPECT_EQ(m.apply(c), 30);
  EXPECT_EQ(m.live_bytes(), 80);
  EXPECT_EQ(m.peak_bytes(), 150);
  EXPECT_EQ(m.live_allocations(), 2u);
}

TEST(CuptiTranslate, EnabledCallbackIdsCoverTheIssueList) {
  const auto& r = CuptiTranslator::runtime_cbids();
  const auto& d = CuptiTranslator::driver_cbids();
  auto has = [](const std::vector<CUpti_CallbackId>& v, CUpti_CallbackId id) { return std::find(v.begin(), v.end(), id) != v.end(); };
  for (auto id : {CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
                  CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
                  CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060})
    EXPECT_TRUE(has(r, id)) << id;
  for (auto id : {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
                  CUPTI_DRIVER_TRACE_CBID_cuMemCreate, CUPTI_DRIVER_TRACE_CBID_cuMemMap, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
                  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                  CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel})
    EXPECT_TRUE(has(d, id)) << id;
  EXPECT_TRUE(has(r, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000)) << "CUDA 13's <<<>>> launches";
}

// Issue 21.1: the graph calls of both APIs become GraphEvents (stream, graph, exec, the graph
// launch's correlation id), read from the real *_params structs; failed calls give no graph.
TEST(CuptiTranslate, GraphCaptureInstantiateAndLaunch) {
  CuptiTranslator t;
  cudaGraph_t graph = reinterpret_cast<cudaGraph_t>(P(0x6000));
  cudaStreamEndCapture_v10000_params end{reinterpret_cast<cudaStream_t>(P(0x5000)), &graph};
  auto enter = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, &end,
                    CUPTI_API_ENTER);
  ASSERT_TRUE(enter.graph);
  EXPECT_EQ(enter.graph->kind, GraphEvent::kEndCaptureBegins);
  EXPECT_EQ(enter.graph->stream, 0x5000u);
  auto exit = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, &end,
                   CUPTI_API_EXIT);
  ASSERT_TRUE(exit.graph);
  EXPECT_EQ(exit.graph->kind, GraphEvent::kCaptured);
  EXPECT_EQ(exit.graph->graph, 0x6000u);
  auto failed = runtime(t, CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, &end, 904 /* unjoined */);
  ASSERT_TRUE(failed.graph);
  EXPECT_EQ(failed.graph->graph, 0u) << "a failed capture leaves no graph";

  cudaGraphExec_t exec = reinterpret_cast<cudaGraphExec_t>(P(0x7000));
  cudaGraphInstantiate_v12000_params inst{&exec, graph, 0};
  auto i = runtime(t, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000, &inst);
  ASSERT_TRUE(i.graph);
  EXPECT_EQ(i.graph->kind, GraphEvent::kInstantiated);
  EXPECT_EQ(i.graph->graph, 0x6000u);
  EXPECT_EQ(i.graph->exec, 0x7000u);

  cudaGraphLaunch_v10000_params launch{exec, reinterpret_cast<cudaStream_t>(P(0x5000))};
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, &launch, CUPTI_API_ENTER, 0,
       nullptr, 42);
  auto l = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, &launch,
                CUPTI_API_EXIT, 0, nullptr, 42);
  ASSERT_TRUE(l.graph);
  EXPECT_EQ(l.graph->kind, GraphEvent::kLaunched);
  EXPECT_EQ(l.graph->exec, 0x7000u);
  EXPECT_EQ(l.graph->correlation, 42u);

  // The driver API: cuGraphLaunch with its own correlation id.
  cuGraphLaunch_params dl{reinterpret_cast<CUgraphExec>(P(0x7000)), reinterpret_cast<CUstream>(P(0x5000))};
  call(t, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &dl, CUPTI_API_ENTER, 0, nullptr, 43);
  auto d = call(t, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &dl, CUPTI_API_EXIT, 0, nullptr, 43);
  ASSERT_TRUE(d.graph);
  EXPECT_EQ(d.graph->correlation, 43u);
  EXPECT_FALSE(t.on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, nullptr).graph);
  for (CUpti_CallbackId id : {CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000})
    EXPECT_NE(std::find(CuptiTranslator::runtime_cbids().begin(), CuptiTranslator::runtime_cbids().end(), id),
              CuptiTranslator::runtime_cbids().end()) << "not subscribed: " << id;
  for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture})
    EXPECT_NE(std::find(CuptiTranslator::driver_cbids().begin(), CuptiTranslator::driver_cbids().end(), id),
              CuptiTranslator::driver_cbids().end()) << "not subscribed: " << id;
}

// Issue 21.2: parameter sizes from a kernel's mangled name (what a runtime launch without a
// driver callback leaves to go by).
TEST(CuptiTranslate, ParamSizesFromTheMangledName) {
  EXPECT_EQ(param_sizes_from_name("_Z11gather_rowsPKfPKliiPf"), (std::vector<size_t>{8, 8, 4, 4, 8}));
  EXPECT_EQ(param_sizes_from_name("_Z17index_select_info10TensorInfoS_S_i"), (std::vector<size_t>{0, 0, 0, 4}));
  EXPECT_EQ(param_sizes_from_name("_Z4nonev"), std::vector<size_t>{});
  // a template: its arguments hold commas and angle brackets of their own
  EXPECT_EQ(param_sizes_from_name("_Z6reduceIfLi256EEvPKT_PS0_mb"), (std::vector<size_t>{8, 8, 8, 1}));
  EXPECT_FALSE(param_sizes_from_name("triton_gather")) << "an extern \"C\" name says nothing";
  EXPECT_FALSE(param_sizes_from_name(nullptr));
}

// A cudaLaunchKernel with no driver launch inside (the real runtime's): pointers are read by
// the name's parameter types; a struct parameter leaves the launch marked unread.
TEST(CuptiTranslate, RuntimeLaunchWithoutADriverCallbackIsReadByName) {
  CuptiTranslator t;
  const void* w = P(0x7f0000001000);
  const void* ix = P(0x7f0000002000);
  int n = 3, dim = 8;
  void* out = P(0x7f0000003000);
  void* args[] = {&w, &ix, &n, &dim, &out};
  char host_fn;
  cudaLaunchKernel_v7000_params p{&host_fn, dim3(1), dim3(1), args, 0, nullptr};
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, CUPTI_API_ENTER, 0,
       "_Z11gather_rowsPKfPKliiPf");
  auto o = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, CUPTI_API_EXIT, 0,
                "_Z11gather_rowsPKfPKliiPf");
  ASSERT_TRUE(o.launch);
  EXPECT_TRUE(o.launch->args_read);
  EXPECT_EQ(o.launch->pointers, (std::vector<uint64_t>{0x7f0000001000, 0x7f0000002000, 0x7f0000003000}));

  struct Info { const void* data; long sizes[4]; } info{w, {1, 2, 3, 4}};
  void* sargs[] = {&info, &n};
  cudaLaunchKernel_v7000_params q{&host_fn, dim3(1), dim3(1), sargs, 0, nullptr};
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &q, CUPTI_API_ENTER, 0,
       "_Z3sel4Infoi");
  auto s = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &q, CUPTI_API_EXIT, 0,
                "_Z3sel4Infoi");
  ASSERT_TRUE(s.launch);
  EXPECT_FALSE(s.launch->args_read) << "a struct parameter's layout is unknown: the launch must say so";
}

// Issue 21.4: names are demangled once per mangled name (launch callbacks and kernel records).
TEST(CuptiTranslate, DemangledNamesAreCachedByMangledName) {
  EXPECT_EQ(demangle_cached(kMangled), "emb_lookup(float const*, long const*, int)");
  EXPECT_EQ(demangle_cached(kMangled), demangle(kMangled));
  EXPECT_EQ(demangle_cached("_Z6secondiPKt"), "second(int, unsigned short const*)");
  EXPECT_EQ(demangle_cached("triton_gather"), "triton_gather");
  EXPECT_EQ(demangle_cached(nullptr), demangle(nullptr));
}

// Issue 21.2: __cudaLaunchKernel's parameters are read through a layout CUDA 13 does not
// publish. If the first launch does not show a CUkernel the driver knows where the layout says,
// the read is turned off for good with one warning, and nothing is read (no crash, no guess).
TEST(CuptiTranslate, AnUnexpectedChevronLayoutTurnsTheReadOffWithOneWarning) {
  CuptiTranslator t(fake_layout);
  uint64_t w = 0x5550000;
  void* args[] = {&w};
  // Not a handle (a small integer where the CUkernel should be): off at once.
  cudaLaunchKernel_v7000_params p{P(0x10), dim3(1), dim3(1), args, 0, nullptr};
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &p, CUPTI_API_ENTER, 0, kMangled);
  auto first = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &p, CUPTI_API_EXIT, 0, kMangled);
  ASSERT_TRUE(first.launch);
  EXPECT_FALSE(first.launch->args_read);
  EXPECT_TRUE(first.launch->pointers.empty());
  EXPECT_NE(first.warning.find("__cudaLaunchKernel"), std::string::npos);
  // A valid CUkernel afterwards is not read either, and the warning is not repeated.
  const void* kernel = P(0x9700);
  g_layouts[kernel] = {{0, 8}};
  cudaLaunchKernel_v7000_params q{kernel, dim3(1), dim3(1), args, 0, nullptr};
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &q, CUPTI_API_ENTER, 0, kMangled);
  auto next = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &q, CUPTI_API_EXIT, 0, kMangled);
  ASSERT_TRUE(next.launch);
  EXPECT_TRUE(next.launch->pointers.empty());
  EXPECT_TRUE(next.warning.empty());
  // A fresh translator whose first launch is right keeps reading.
  CuptiTranslator good(fake_layout);
  call(good, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &q, CUPTI_API_ENTER, 0, kMangled);
  auto read = call(good, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &q, CUPTI_API_EXIT, 0, kMangled);
  ASSERT_TRUE(read.launch);
  EXPECT_EQ(read.launch->pointers, std::vector<uint64_t>{w});
  EXPECT_TRUE(read.warning.empty());
}
