#include "cupti_translate.h"

#include <cxxabi.h>
#include <cuda.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cupti_callback_data.h"
#include "cupti_memory_apis.h"

namespace edo::capture {

namespace {
thread_local int tl_runtime_depth = 0;


// Argument words read per launch (a launch passes at most 32 KiB of parameters; PyTorch's
// largest structs are a few KiB): bounds the callback's work.
constexpr size_t kMaxArgWords = 1024;
// Device pointers are user-space virtual addresses (unified addressing): never in the first
// page, never at or above 2^57 (the top of 5-level paging). Small integers, sizes, and pairs
// of floats fall outside.
constexpr uint64_t kLowestPointer = 4096;
constexpr uint64_t kPastUserSpace = uint64_t{1} << 57;

// CUDA 13 publishes no *_params struct for __cudaLaunchKernel (cupti_runtime_cbid.h:518 has its
// id, generated_cuda_runtime_api_meta.h no struct); CUPTI's structs list a call's parameters in
// order, so it is read as cudaLaunchKernel_v7000_params, whose parameter list matches the one
// crt/device_functions.h:2932-2939 declares (cudaKernel_t, dim3, dim3, void**, size_t,
// cudaStream_t). Checked here at build time; at the first launch (chevron_ok) the values
// found must also look like a CUkernel the driver knows and an argument array.
struct ChevronParams {
  cudaKernel_t kernel;
  dim3 gridDim;
  dim3 blockDim;
  void** args;
  size_t sharedMem;
  cudaStream_t stream;
};
static_assert(sizeof(ChevronParams) == sizeof(cudaLaunchKernel_v7000_params) &&
                  offsetof(ChevronParams, args) == offsetof(cudaLaunchKernel_v7000_params, args) &&
                  offsetof(ChevronParams, stream) == offsetof(cudaLaunchKernel_v7000_params, stream),
              "__cudaLaunchKernel's parameters no longer match cudaLaunchKernel_v7000_params: review the read");

bool looks_like_pointer(const void* p) {
  const uint64_t v = reinterpret_cast<uint64_t>(p);
  return v >= kLowestPointer && v < kPastUserSpace && v % alignof(void*) == 0;
}

bool is_runtime_launch(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
      return true;
    default:
      return false;
  }
}

bool is_driver_launch(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      return true;
    default:
      return false;
  }
}

// A launch in progress on this thread, between the ENTER and EXIT callbacks of the call that
// made it. A runtime launch's frame collects the arguments of the driver launch it goes
// through; that driver launch's own frame is then `merged` (reported once, by the runtime).
struct LaunchFrame {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  LaunchInfo info;
  void** args = nullptr;          // runtime launches: the argument array
  const void* kernel = nullptr;   // __cudaLaunchKernel: its CUkernel
  bool merged = false;
};
// The thread's frames, reused from launch to launch: a frame's name and pointer list keep
// their capacity, so that a launch allocates nothing once the thread has seen its kernels
// (issue 21 §4). frames[0, depth) are in progress; a popped frame stays readable until the
// next push (Output::launch points at it).
struct LaunchFrames {
  std::vector<LaunchFrame> frames;
  size_t depth = 0;
  LaunchFrame* top() { return depth ? &frames[depth - 1] : nullptr; }
  LaunchFrame& push(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    if (depth == frames.size()) frames.emplace_back();
    LaunchFrame& f = frames[depth++];
    f.domain = domain;
    f.cbid = cbid;
    f.info.name.clear();
    f.info.pointers.clear();
    f.info.stream = 0;
    f.info.correlation = f.info.driver_correlation = 0;
    f.info.args_read = false;
    f.args = nullptr;
    f.kernel = nullptr;
    f.merged = false;
    return f;
  }
};
thread_local LaunchFrames* tl_launches = nullptr;  // leaked per thread: tiny

LaunchFrames& launches() {
  if (!tl_launches) tl_launches = new LaunchFrames();
  return *tl_launches;
}

// The innermost frame of a traced call with this domain and id, popped (it stays readable
// until the thread's next launch callback), or nullptr.
LaunchFrame* pop_frame(CUpti_CallbackDomain domain, CUpti_CallbackId id) {
  LaunchFrames& v = launches();
  LaunchFrame* f = v.top();
  if (!f || f->domain != domain || f->cbid != id) return nullptr;
  --v.depth;
  return f;
}
}  // namespace

std::optional<std::vector<size_t>> param_sizes_from_name(const char* mangled) {
  if (!mangled || std::strncmp(mangled, "_Z", 2) != 0) return std::nullopt;
  const std::string d = demangle(mangled);
  // The parameter list: the last top-level parenthesised group (template arguments and a
  // function-pointer parameter hold parentheses of their own).
  if (d.empty() || d.back() != ')') return std::nullopt;
  int depth = 0;
  size_t open = std::string::npos;
  for (size_t i = d.size(); i-- > 0;) {
    const char c = d[i];
    if (c == ')' || c == '>' || c == ']') ++depth;
    else if (c == '(' || c == '<' || c == '[') --depth;
    if (depth == 0) {
      open = i;
      break;
    }
  }
  if (open == std::string::npos || d[open] != '(') return std::nullopt;
  const std::string list = d.substr(open + 1, d.size() - open - 2);
  std::vector<size_t> sizes;
  if (list.empty() || list == "void") return sizes;
  std::vector<std::string> params;
  std::string cur;
  depth = 0;
  for (char c : list) {
    if (c == '(' || c == '<' || c == '[') ++depth;
    else if (c == ')' || c == '>' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      params.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  params.push_back(cur);
  static const std::pair<const char*, size_t> kFundamental[] = {
      {"bool", 1}, {"char", 1}, {"signed char", 1}, {"unsigned char", 1}, {"short", 2}, {"unsigned short", 2},
      {"int", 4}, {"unsigned int", 4}, {"float", 4}, {"long", 8}, {"unsigned long", 8}, {"long long", 8},
      {"unsigned long long", 8}, {"double", 8}, {"__int128", 16}, {"unsigned __int128", 16}, {"wchar_t", 4},
      {"char16_t", 2}, {"char32_t", 4}};
  for (std::string p : params) {
    while (!p.empty() && p.front() == ' ') p.erase(0, 1);
    while (!p.empty() && p.back() == ' ') p.pop_back();
    // top-level const/volatile of a by-value parameter do not change its size
    for (const char* q : {" const", " volatile"})
      while (p.size() > std::strlen(q) && p.compare(p.size() - std::strlen(q), std::string::npos, q) == 0)
        p.resize(p.size() - std::strlen(q));
    size_t size = 0;
    if (!p.empty() && (p.back() == '*' || p.back() == '&')) {
      size = sizeof(void*);
    } else {
      for (const auto& [name, bytes] : kFundamental)
        if (p == name) size = bytes;
    }
    sizes.push_back(size);
  }
  return sizes;
}

namespace {
// Demangled names by mangled name: a launch callback and every kernel record would otherwise
// demangle again (0.8-3.8 us for PyTorch's templated names). Keyed by the name itself, not the
// kernel handle, so a handle reused after a module unload cannot bring back another kernel's
// name. Bounded: past the limit names are demangled each time.
struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
std::shared_mutex names_mu;
std::unordered_map<std::string, std::string, NameHash, std::equal_to<>>* names = nullptr;  // leaked: used at exit
constexpr size_t kMaxNames = size_t{1} << 16;
}  // namespace

const std::string& demangle_cached(const char* mangled) {
  // Entries are never erased (an unordered_map's elements stay where they are on rehash), so
  // the reference stays valid for the process's lifetime; past the bound the name goes into
  // a per-thread string, valid until this thread's next call.
  thread_local std::string* uncached = nullptr;
  // The thread's last few names by the caller's pointer (CUPTI's symbol name of a kernel):
  // no lock and no hash of a long name when it launches the same kernels again. The text is
  // compared too: a pointer may be reused for another name.
  struct Recent {
    const char* ptr = nullptr;
    const std::string* key = nullptr;
    const std::string* name = nullptr;
  };
  constexpr size_t kRecent = 8;
  thread_local Recent* recent = nullptr;
  Recent* slot = nullptr;
  if (mangled) {
    if (!recent) recent = new Recent[kRecent];  // leaked per thread
    slot = &recent[(reinterpret_cast<uintptr_t>(mangled) >> 3) % kRecent];
    if (slot->ptr == mangled && std::strcmp(slot->key->c_str(), mangled) == 0) return *slot->name;
  }
  const std::string_view key(mangled ? mangled : "");
  if (mangled) {
    std::shared_lock<std::shared_mutex> lk(names_mu);
    if (names) {
      auto it = names->find(key);
      if (it != names->end()) {
        *slot = {mangled, &it->first, &it->second};
        return it->second;
      }
    }
  }
  std::string d = demangle(mangled);
  if (mangled) {
    std::unique_lock<std::shared_mutex> lk(names_mu);
    if (!names) names = new std::unordered_map<std::string, std::string, NameHash, std::equal_to<>>();
    if (names->size() < kMaxNames) {
      auto it = names->emplace(key, std::move(d)).first;
      *slot = {mangled, &it->first, &it->second};
      return it->second;
    }
  }
  if (!uncached) uncached = new std::string();  // leaked per thread: one name
  *uncached = std::move(d);
  return *uncached;
}

std::string demangle(const char* name) {
  if (!name) return "(unknown kernel)";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status == 0 && d) {
    std::string s(d);
    std::free(d);
    return s;
  }
  return name;
}

// CUDA graph calls: their parameter structs (CUDA 13.0 generated_cuda_runtime_api_meta.h:
// 1599-1616, 2297-2330; generated_cuda_meta.h:1953-1963, 3642-3645, 3716-3737, 3812-3817) start
// with the same fields within each group (the instantiate calls: the exec out-pointer, then the
// graph; cudaGraphInstantiate_v10000, whose struct 13.0 no longer ships, began the same way).
std::optional<GraphEvent> runtime_graph_event(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  GraphEvent g;
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000: {
      auto* p = params<cudaStreamEndCapture_v10000_params>(cb);
      if (!p) return std::nullopt;
      g.kind = enter ? GraphEvent::kEndCaptureBegins : GraphEvent::kCaptured;
      g.stream = as_u64(p->stream);
      if (!enter) g.graph = runtime_ok(cb) && p->pGraph ? as_u64(*p->pGraph) : 0;
      return g;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000: {
      auto* p = params<cudaGraphInstantiateWithFlags_v11040_params>(cb);
      if (enter || !p || !runtime_ok(cb) || !p->pGraphExec) return std::nullopt;
      g.kind = GraphEvent::kInstantiated;
      g.graph = as_u64(p->graph);
      g.exec = as_u64(*p->pGraphExec);
      return g;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000: {
      auto* p = params<cudaGraphLaunch_v10000_params>(cb);
      if (enter || !p || !runtime_ok(cb)) return std::nullopt;
      g.kind = GraphEvent::kLaunched;
      g.exec = as_u64(p->graphExec);
      g.stream = as_u64(p->stream);
      g.correlation = cb->correlationId;
      return g;
    }
    default:
      return std::nullopt;
  }
}

std::optional<GraphEvent> driver_graph_event(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  GraphEvent g;
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz: {
      auto* p = params<cuStreamEndCapture_params>(cb);
      if (!p) return std::nullopt;
      g.kind = enter ? GraphEvent::kEndCaptureBegins : GraphEvent::kCaptured;
      g.stream = as_u64(p->hStream);
      if (!enter) g.graph = driver_ok(cb) && p->phGraph ? as_u64(*p->phGraph) : 0;
      return g;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz: {
      auto* p = params<cuGraphInstantiateWithFlags_params>(cb);
      if (enter || !p || !driver_ok(cb) || !p->phGraphExec) return std::nullopt;
      g.kind = GraphEvent::kInstantiated;
      g.graph = as_u64(p->hGraph);
      g.exec = as_u64(*p->phGraphExec);
      return g;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
      auto* p = params<cuGraphLaunch_params>(cb);
      if (enter || !p || !driver_ok(cb)) return std::nullopt;
      g.kind = GraphEvent::kLaunched;
      g.exec = as_u64(p->hGraph);  // named hGraph, a CUgraphExec (generated_cuda_meta.h:3734-3737)
      g.stream = as_u64(p->hStream);
      g.correlation = cb->correlationId;
      return g;
    }
    default:
      return std::nullopt;
  }
}

const std::vector<CUpti_CallbackId>& CuptiTranslator::runtime_cbids() {
  static const std::vector<CUpti_CallbackId> ids = {
      CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,          CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,     CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
      CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
      CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
      CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
      CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000,
      CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000,
      CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040,
      CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000,
      CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000,
      CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000};
  return ids;
}

const std::vector<CUpti_CallbackId>& CuptiTranslator::driver_cbids() {
  static const std::vector<CUpti_CallbackId> ids = {
      CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,   CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemCreate,     CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
      CUPTI_DRIVER_TRACE_CBID_cuMemMap,        CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuModuleUnload, CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload};
  return ids;
}

void CuptiTranslator::name_into(const char* symbol, const void* handle, KernelHandle kind, std::string& out) const {
  // Assigned into `out`, whose capacity a reused frame keeps: no allocation for a known name.
  if (symbol) {
    out = demangle_cached(symbol);
    return;
  }
  if (name_ && handle) {
    const std::string n = name_(handle, kind);
    if (!n.empty()) {
      out = demangle_cached(n.c_str());
      return;
    }
  }
  out = demangle_cached(nullptr);
}

void CuptiTranslator::pointer_args(const void* handle, KernelHandle kind, void** args, void** extra, LaunchInfo& out) {
  if (!layout_ || !handle) return;
  // Packed argument buffer (cuLaunchKernel `extra`): CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE.
  const char* buffer = nullptr;
  size_t buffer_size = 0;
  if (!args && extra) {
    for (size_t i = 0; i < 64 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = static_cast<const char*>(extra[i + 1]);
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) buffer_size = *static_cast<const size_t*>(extra[i + 1]);
    }
    if (!buffer) return;
  }
  if (!args && !buffer) return;
  const std::shared_ptr<const ParamLayout> layout = layout_(handle, kind);
  if (!layout) return;
  out.pointers.clear();
  // Every 8-byte word of every parameter, not only 8-byte parameters: PyTorch passes its
  // tensors inside structs (TensorInfo, at::detail::Array<char*, N>, a functor's captures).
  // A struct holding a pointer is 8-aligned, so its pointers sit at multiples of 8 from the
  // parameter's start. Words that cannot be a user-space address are skipped here; the rest
  // are looked up in the address index (O(log n), with an O(1) rejection outside all tables).
  size_t words = 0;
  for (size_t i = 0; i < layout->size() && words < kMaxArgWords; ++i) {
    const auto [off, size] = (*layout)[i];
    if (size < sizeof(uint64_t)) continue;
    const char* base = nullptr;
    if (args) {
      base = static_cast<const char*>(args[i]);
    } else {
      if (buffer_size && off + sizeof(uint64_t) > buffer_size) break;
      base = buffer + off;
    }
    if (!base) continue;
    size_t n = size / sizeof(uint64_t);
    if (!args && buffer_size) n = std::min(n, (buffer_size - off) / sizeof(uint64_t));
    n = std::min(n, kMaxArgWords - words);
    words += n;
    for (size_t w = 0; w < n; ++w) {
      uint64_t v = 0;
      std::memcpy(&v, base + w * sizeof v, sizeof v);
      if (v >= kLowestPointer && v < kPastUserSpace) out.pointers.push_back(v);
    }
  }
  out.args_read = true;
}

void CuptiTranslator::chevron_args(const void* kernel, void** args, LaunchInfo& info, Output& out) {
  const int state = chevron_state_.load(std::memory_order_acquire);
  if (state == 2) return;
  bool ok = looks_like_pointer(kernel) && looks_like_pointer(args);
  if (ok) {
    pointer_args(kernel, KernelHandle::kKernel, args, nullptr, info);
    ok = info.args_read;  // the driver described the handle as a CUkernel
  }
  if (state == 1) return;
  // First use decides: a CUkernel handle and an argument array where the layout says, and a
  // CUkernel the driver can describe. Anything else turns the read off for the process.
  int expected = 0;
  if (chevron_state_.compare_exchange_strong(expected, ok ? 1 : 2) && !ok) {
    info.pointers.clear();
    info.args_read = false;
    out.warning = "the parameters of CUDA 13's __cudaLaunchKernel (kernel<<<...>>>) are not laid out as edo reads "
                  "them: the arguments of <<<>>> launches are not read (their kernels are listed without tables)";
  }
}

void CuptiTranslator::name_args(const char* symbol, void** args, LaunchInfo& out) {
  if (!symbol) return;
  // Parsed once per kernel name (a demangle and a parse per launch cost microseconds). Cached
  // entries are never erased, so the one found is read after the lock without a copy.
  const std::optional<std::vector<size_t>>* cached = nullptr;
  std::optional<std::vector<size_t>> uncached;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = name_sizes_.find(std::string_view(symbol));
    if (it != name_sizes_.end()) cached = &it->second;
  }
  if (!cached) {
    uncached = param_sizes_from_name(symbol);
    std::lock_guard<std::mutex> lk(mu_);
    if (name_sizes_.size() < (size_t{1} << 14)) cached = &name_sizes_.emplace(symbol, uncached).first->second;
    else cached = &uncached;
  }
  const std::optional<std::vector<size_t>>& sizes = *cached;
  if (!sizes) return;
  out.pointers.clear();
  bool complete = true;
  for (size_t i = 0; i < sizes->size(); ++i) {
    if ((*sizes)[i] == 0) {
      complete = false;  // a struct or class: its size (and where pointers sit in it) is unknown
      continue;
    }
    if ((*sizes)[i] != sizeof(uint64_t) || !args[i]) continue;
    uint64_t v = 0;
    std::memcpy(&v, args[i], sizeof v);
    if (v >= kLowestPointer && v < kPastUserSpace) out.pointers.push_back(v);
  }
  out.args_read = complete;
}

CuptiTranslator::Output CuptiTranslator::on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                                     const CUpti_CallbackData* cb) {
  if (!cb) return {};
  const bool enter = cb->callbackSite == CUPTI_API_ENTER;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return on_runtime(id, cb, enter);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) return on_driver(id, cb, enter);
  return {};
}

CuptiTranslator::Output CuptiTranslator::on_runtime(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  Output out;
  if (enter) {
    ++tl_runtime_depth;
    out.graph = runtime_graph_event(id, cb, true);
    if (is_runtime_launch(id)) runtime_launch_enter(id, cb);
    return out;
  }
  if (tl_runtime_depth > 0) --tl_runtime_depth;
  if (is_runtime_launch(id)) return runtime_launch_exit(id, cb);
  if ((out.graph = runtime_graph_event(id, cb, false))) return out;
  if (!runtime_ok(cb)) return out;
  if (auto op = runtime_memory_op(id, cb)) out.mem.push_back(std::move(*op));
  return out;
}

void CuptiTranslator::runtime_launch_enter(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  // Only remembered here: the arguments come from the driver launch this call goes through
  // (see driver_launch), and the launch is reported at EXIT.
  LaunchFrame& f = launches().push(CUPTI_CB_DOMAIN_RUNTIME_API, id);
  if (cb->symbolName) f.info.name = demangle_cached(cb->symbolName);
  f.info.correlation = cb->correlationId;
  if (id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 ||
      id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060) {
    auto* p = params<cudaLaunchKernelExC_v11060_params>(cb);
    if (p) {
      if (p->config) f.info.stream = as_u64(p->config->stream);
      f.args = p->args;
    }
  } else if (auto* p = params<cudaLaunchKernel_v7000_params>(cb)) {
    // cudaLaunchKernel, cudaLaunchCooperativeKernel and __cudaLaunchKernel share this
    // parameter layout; the last one's first parameter is a cudaKernel_t (a CUkernel).
    f.info.stream = as_u64(p->stream);
    f.args = p->args;
    if (id == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000 ||
        id == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000)
      f.kernel = p->func;
  }
}

CuptiTranslator::Output CuptiTranslator::runtime_launch_exit(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  Output out;
  LaunchFrame* f = pop_frame(CUPTI_CB_DOMAIN_RUNTIME_API, id);
  if (!f || !runtime_ok(cb)) return out;
  // No driver launch seen (a runtime that launches another way): a CUkernel can still be
  // described by the driver.
  if (!f->info.args_read && f->kernel) chevron_args(f->kernel, f->args, f->info, out);
  // No handle the driver can describe (cudaLaunchKernel and friends take the host-side entry function): the
  // parameter types in the kernel's mangled name give their number and the pointers' places.
  if (!f->info.args_read && !f->kernel && f->args) name_args(cb->symbolName, f->args, f->info);
  if (f->info.name.empty()) name_into(cb->symbolName, f->kernel, KernelHandle::kKernel, f->info.name);
  out.launch = &f->info;
  return out;
}

CuptiTranslator::Output CuptiTranslator::on_driver(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  Output out;
  if (is_driver_launch(id)) return driver_launch(id, cb, enter);
  if (tl_runtime_depth > 0) return out;  // inside a runtime call we already trace
  if ((out.graph = driver_graph_event(id, cb, enter))) return out;
  // At ENTER: the handles are still valid then, and any use after the call is of a new kernel.
  if (id == CUPTI_DRIVER_TRACE_CBID_cuModuleUnload || id == CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload) {
    out.unloaded = enter;
    return out;
  }
  if (enter || !driver_ok(cb) || vmm_handle_call(id, cb)) return out;
  if (auto op = driver_memory_op(id, cb)) out.mem.push_back(std::move(*op));
  return out;
}

bool CuptiTranslator::vmm_handle_call(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  // Physical memory without an address yet: remembered until it is mapped (cuMemMap).
  if (id == CUPTI_DRIVER_TRACE_CBID_cuMemCreate) {
    auto* p = params<cuMemCreate_params>(cb);
    if (p->handle) {
      std::lock_guard<std::mutex> lk(mu_);
      vmm_handles_[uint64_t(*p->handle)] = p->size;
    }
    return true;
  }
  if (id == CUPTI_DRIVER_TRACE_CBID_cuMemRelease) {
    auto* p = params<cuMemRelease_params>(cb);
    std::lock_guard<std::mutex> lk(mu_);
    vmm_handles_.erase(uint64_t(p->handle));
    return true;
  }
  return false;
}

CuptiTranslator::Output CuptiTranslator::driver_launch(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter) {
  Output out;
  if (!enter) {
    LaunchFrame* f = pop_frame(CUPTI_CB_DOMAIN_DRIVER_API, id);
    if (f && !f->merged && driver_ok(cb)) out.launch = &f->info;
    return out;
  }
  CUfunction fn = nullptr;
  void** kernel_params = nullptr;
  void** extra = nullptr;
  uint64_t stream = 0;
  if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz) {
    if (auto* p = params<cuLaunchKernel_params>(cb))
      fn = p->f, kernel_params = p->kernelParams, extra = p->extra, stream = as_u64(p->hStream);
  } else if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
    if (auto* p = params<cuLaunchKernelEx_params>(cb))
      fn = p->f, kernel_params = p->kernelParams, extra = p->extra, stream = p->config ? as_u64(p->config->hStream) : 0;
  } else if (auto* p = params<cuLaunchCooperativeKernel_params>(cb)) {  // cooperative launches: no `extra`
    fn = p->f, kernel_params = p->kernelParams, stream = as_u64(p->hStream);
  }
  LaunchFrames& v = launches();
  LaunchFrame* r = v.top();
  if (r && r->domain == CUPTI_CB_DOMAIN_RUNTIME_API && !r->info.args_read) {
    // The driver launch of the runtime launch in progress on this thread: its CUfunction
    // and kernelParams describe the runtime launch's arguments.
    pointer_args(fn, KernelHandle::kFunction, kernel_params, extra, r->info);
    r->info.driver_correlation = cb->correlationId;
    if (r->info.name.empty()) name_into(cb->symbolName, fn, KernelHandle::kFunction, r->info.name);
    v.push(CUPTI_CB_DOMAIN_DRIVER_API, id).merged = true;  // (may move the frames: r is not used after)
  } else {
    LaunchFrame& f = v.push(CUPTI_CB_DOMAIN_DRIVER_API, id);
    name_into(cb->symbolName, fn, KernelHandle::kFunction, f.info.name);
    f.info.correlation = cb->correlationId;
    f.info.stream = stream;
    pointer_args(fn, KernelHandle::kFunction, kernel_params, extra, f.info);
  }
  return out;
}

std::optional<KernelTime> CuptiTranslator::kernel_time(const CUpti_Activity* rec) {
  if (!rec || (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)) return std::nullopt;
  auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
  KernelTime t;
  t.name = demangle_cached(k->name);
  t.ns = k->end > k->start ? k->end - k->start : 0;
  t.correlation = k->correlationId;
  return t;
}

std::optional<MemOp> CuptiTranslator::memory_record(const CUpti_Activity* rec) {
  if (!rec || rec->kind != CUPTI_ACTIVITY_KIND_MEMORY2) return std::nullopt;
  auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(rec);
  if (m->memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) return std::nullopt;
  MemOp op;
  if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) op.kind = MemOp::kAlloc;
  else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) op.kind = MemOp::kFree;
  else return std::nullopt;
  op.address = m->address;
  op.bytes = m->bytes;
  op.stream = m->streamId;
  op.device = int32_t(m->deviceId);
  op.correlation = m->correlationId;
  op.api = m->memoryPoolConfig.memoryPoolType != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID ? "MEMORY2:pool" : "MEMORY2";
  return op;
}

int64_t MemoryTracker::apply(const MemOp& op) {
  if (op.kind == MemOp::kAlloc) {
    if (!op.address || allocs_.count(op.address)) return 0;  // duplicate report
    allocs_[op.address] = op.bytes;
    live_ += int64_t(op.bytes);
    peak_ = std::max(peak_, live_);
    return int64_t(op.bytes);
  }
  auto it = allocs_.find(op.address);
  if (it == allocs_.end()) return 0;
  int64_t bytes = int64_t(it->second);
  if (op.bytes && op.bytes < it->second) {
    // Partial unmap of a VMM range: keep the rest mapped.
    bytes = int64_t(op.bytes);
    const uint64_t rest = it->second - op.bytes, start = it->first + op.bytes;
    allocs_.erase(it);
    allocs_[start] = rest;
  } else {
    allocs_.erase(it);
  }
  live_ -= bytes;
  return -bytes;
}

void tables_of_launch(const LaunchInfo& l, const wire::AddressIndex& idx, std::vector<const std::string*>& out) {
  out.clear();
  for (uint64_t p : l.pointers) {
    const auto* e = idx.find(p);
    if (!e) continue;
    // A launch reads a few tables: a sorted insert into a short list.
    auto at = std::lower_bound(out.begin(), out.end(), &e->name, [](const std::string* a, const std::string* b) { return *a < *b; });
    if (at == out.end() || **at != e->name) out.insert(at, &e->name);
  }
}

std::vector<std::string> tables_of_launch(const LaunchInfo& l, const wire::AddressIndex& idx) {
  std::vector<const std::string*> names;
  tables_of_launch(l, idx, names);
  std::vector<std::string> out;
  for (const std::string* n : names) out.push_back(*n);
  return out;
}

}  // namespace edo::capture
