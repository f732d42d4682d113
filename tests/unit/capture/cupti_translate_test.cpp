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
CuptiTranslator::Output driver(CuptiTranslator& t, CUpti_CallbackId id, const void* params, int rv = 0) {
  call(t, CUPTI_CB_DOMAIN_DRIVER_API, id, params, CUPTI_API_ENTER);
  return call(t, CUPTI_CB_DOMAIN_DRIVER_API, id, params, CUPTI_API_EXIT, rv);
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
// Fake parameter layout: kernel(const float* weights, const int64_t* idx, int n)
std::map<const void*, std::vector<std::pair<size_t, size_t>>> g_layouts;
bool fake_param_info(const void* f, bool, size_t i, size_t* off, size_t* size) {
  auto it = g_layouts.find(f);
  if (it == g_layouts.end() || i >= it->second.size()) return false;
  *off = it->second[i].first;
  *size = it->second[i].second;
  return true;
}
const char* kMangled = "_Z10emb_lookupPKfPKli";
}  // namespace

TEST(CuptiTranslate, RuntimeLaunchResolvesPointerArgumentsToTables) {
  const void* host_fn = P(0x401000);
  g_layouts[host_fn] = {{0, 8}, {8, 8}, {16, 4}};
  CuptiTranslator t(fake_param_info);
  uint64_t weights = 0x7f0000000100, idx = 0x7f0000900000;
  int n = 64;
  void* args[] = {&weights, &idx, &n};
  cudaLaunchKernel_v7000_params p{host_fn, dim3(4), dim3(128), args, 0, reinterpret_cast<cudaStream_t>(0x5)};
  auto out = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, CUPTI_API_ENTER, 0, kMangled, 9);
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, CUPTI_API_EXIT);
  ASSERT_TRUE(out.launch.has_value());
  EXPECT_EQ(out.launch->name, "emb_lookup(float const*, long const*, int)");
  EXPECT_EQ(out.launch->stream, 0x5u);
  EXPECT_EQ(out.launch->correlation, 9u);
  EXPECT_EQ(out.launch->pointers, (std::vector<uint64_t>{weights, idx}));
  edo::wire::AddressIndex tables;
  tables.add(0x7f0000000000, 1 << 20, "emb.user");
  tables.add(0x7f0000200000, 1 << 20, "emb.item");
  EXPECT_EQ(tables_of_launch(*out.launch, tables), std::vector<std::string>{"emb.user"});
}

TEST(CuptiTranslate, LaunchExAndPerThreadStreamVariants) {
  const void* host_fn = P(0x402000);
  g_layouts[host_fn] = {{0, 8}};
  CuptiTranslator t(fake_param_info);
  uint64_t w = 0x1234000;
  void* args[] = {&w};
  cudaLaunchConfig_t cfg{};
  cfg.stream = reinterpret_cast<cudaStream_t>(0x33);
  cudaLaunchKernelExC_v11060_params p{&cfg, host_fn, args};
  auto out = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060, &p, CUPTI_API_ENTER, 0, "plain_kernel");
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060, &p, CUPTI_API_EXIT);
  ASSERT_TRUE(out.launch.has_value());
  EXPECT_EQ(out.launch->name, "plain_kernel");
  EXPECT_EQ(out.launch->stream, 0x33u);
  EXPECT_EQ(out.launch->pointers, std::vector<uint64_t>{w});
}

TEST(CuptiTranslate, DriverLaunchWithKernelParamsAndWithPackedExtra) {
  CUfunction f = reinterpret_cast<CUfunction>(P(0x9000));
  g_layouts[f] = {{0, 8}, {8, 4}, {16, 8}};
  CuptiTranslator t(fake_param_info);
  uint64_t a = 0xAAAA000, c = 0xCCCC000;
  int b = 7;
  void* kp[] = {&a, &b, &c};
  cuLaunchKernel_params p{f, 1, 1, 1, 32, 1, 1, 0, reinterpret_cast<CUstream>(0x44), kp, nullptr};
  auto out = call(t, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &p, CUPTI_API_ENTER, 0, "triton_emb");
  ASSERT_TRUE(out.launch.has_value());
  EXPECT_EQ(out.launch->pointers, (std::vector<uint64_t>{a, c}));
  EXPECT_EQ(out.launch->stream, 0x44u);
  // Same arguments as one packed buffer.
  alignas(8) unsigned char buf[24] = {};
  std::memcpy(buf, &a, 8);
  std::memcpy(buf + 8, &b, 4);
  std::memcpy(buf + 16, &c, 8);
  size_t size = sizeof buf;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  cuLaunchKernel_params q{f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, extra};
  out = call(t, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &q, CUPTI_API_ENTER, 0, "triton_emb");
  ASSERT_TRUE(out.launch.has_value());
  EXPECT_EQ(out.launch->pointers, (std::vector<uint64_t>{a, c}));
  // cuLaunchKernelEx
  CUlaunchConfig lc{};
  lc.hStream = reinterpret_cast<CUstream>(0x55);
  cuLaunchKernelEx_params e{&lc, f, kp, nullptr};
  out = call(t, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, &e, CUPTI_API_ENTER, 0, "k");
  ASSERT_TRUE(out.launch.has_value());
  EXPECT_EQ(out.launch->stream, 0x55u);
  EXPECT_EQ(out.launch->pointers.size(), 2u);
}

TEST(CuptiTranslate, LaunchWithoutParamInfoStillGivesTheName) {
  CuptiTranslator t;  // no cuFuncGetParamInfo (old driver)
  uint64_t w = 1;
  void* args[] = {&w};
  cudaLaunchKernel_v7000_params p{P(0x1), dim3(1), dim3(1), args, 0, nullptr};
  auto out = call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, CUPTI_API_ENTER, 0, kMangled);
  call(t, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &p, CUPTI_API_EXIT);
  ASSERT_TRUE(out.launch.has_value());
  EXPECT_TRUE(out.launch->pointers.empty());
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
                  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx})
    EXPECT_TRUE(has(d, id)) << id;
}
