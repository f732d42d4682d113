// CUPTI structs -> edo events: the thin, CPU-testable translation layer. No CUPTI or CUDA
// function is called here; tests feed hand-built CUpti_CallbackData / *_params structs /
// activity records (Kineto style).
#pragma once

#include <cupti.h>

#include <atomic>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "edo/wire/attribution.h"

namespace edo::capture {

struct MemOp {
  enum Kind { kAlloc, kFree } kind = kAlloc;
  uint64_t address = 0;
  uint64_t bytes = 0;   // frees: 0 unless the API says (cuMemUnmap); MemoryTracker fills it
  uint64_t stream = 0;
  int32_t device = 0;
  std::string api;      // "cudaMalloc", "cuMemMap", ...
  uint32_t correlation = 0;
};

struct LaunchInfo {
  std::string name;                // demangled kernel name
  std::vector<uint64_t> pointers;  // 8-byte words of the arguments that may be device pointers
  uint64_t stream = 0;
  uint32_t correlation = 0;        // of the API call the application made (what kernel records carry)
  uint32_t driver_correlation = 0; // of the driver launch a runtime launch went through (0: none)
  bool args_read = false;          // the argument layout was known (pointers are complete)
};

// A step in the life of a CUDA graph made by stream capture (torch.cuda.graph, CUDA graph trees
// of torch.compile): the launches captured into it ran no kernel; each launch of the graph
// runs them all, and their kernel records carry the graph launch's correlation id.
struct GraphEvent {
  enum Kind : uint8_t {
    kEndCaptureBegins,  // cuStreamEndCapture / cudaStreamEndCapture ENTER (stream still capturing)
    kCaptured,          // ... EXIT: `graph` holds what `stream` captured (0: the capture failed)
    kInstantiated,      // cuGraphInstantiate* / cudaGraphInstantiate*: `exec` made from `graph`
    kLaunched,          // cuGraphLaunch / cudaGraphLaunch of `exec` on `stream`, `correlation`
  } kind = kCaptured;
  uint64_t stream = 0, graph = 0, exec = 0;
  uint32_t correlation = 0;
};

struct KernelTime {
  std::string name;
  uint64_t ns = 0;
  uint32_t correlation = 0;
};

// A kernel handle the driver can describe without the CUDA runtime: a CUfunction (driver
// launches, and runtime launches as they pass through the driver) or a CUkernel (CUDA 13's
// __cudaLaunchKernel takes a cudaKernel_t, which is a CUkernel).
enum class KernelHandle : uint8_t { kFunction, kKernel };
// (offset, size) of each parameter of a kernel, in order.
using ParamLayout = std::vector<std::pair<size_t, size_t>>;
// The layout of a kernel's parameters, or nullptr when it cannot be had. Called from inside
// CUPTI callbacks: it may use driver calls only (never the application's CUDA runtime).
using ParamLayoutFn = std::function<std::shared_ptr<const ParamLayout>(const void* handle, KernelHandle kind)>;
// The kernel's (mangled) name from the driver, for callbacks that carry no symbolName; same
// rules as ParamLayoutFn. Empty when unknown.
using KernelNameFn = std::function<std::string(const void* handle, KernelHandle kind)>;

std::string demangle(const char* name);
// demangle() through a process-wide cache (thread-safe, bounded): a reference valid for the
// process's lifetime (past the bound: until the calling thread's next call).
const std::string& demangle_cached(const char* mangled);

// The sizes of a kernel's parameters read from its mangled name (Itanium ABI: the parameter
// types are part of a C++ function's name), for a runtime launch that passes through no driver
// callback (cudaLaunchKernel, cudaLaunchKernelExC, cooperative launches: CUPTI reports no driver
// call made inside the runtime, so there is no CUfunction to ask). A pointer, reference or
// fundamental type has a known size; anything else (a struct, a class template, an enum) is 0.
// nullopt when the name is not a mangled C++ function name (an extern "C" kernel).
std::optional<std::vector<size_t>> param_sizes_from_name(const char* mangled);

class CuptiTranslator {
 public:
  explicit CuptiTranslator(ParamLayoutFn layout = nullptr, KernelNameFn name = nullptr)
      : layout_(std::move(layout)), name_(std::move(name)) {}

  struct Output {
    std::vector<MemOp> mem;
    // The launch this callback ended, or nullptr. It lives in the calling thread's reused
    // launch frames (no allocation per launch): valid until the thread's next callback.
    const LaunchInfo* launch = nullptr;
    std::optional<GraphEvent> graph;
    // A module or library was unloaded (cuModuleUnload, cuLibraryUnload): kernel handles may be
    // reused for other kernels from now on, so what is cached per handle is stale.
    bool unloaded = false;
    // Said once per process (tracer_log): something edo reads turned out not as it expects.
    std::string warning;
  };
  // RUNTIME_API and DRIVER_API callbacks. Allocation results are read at API exit (and only
  // when the call succeeded); driver allocations made inside a traced runtime call on the
  // same thread are ignored (the runtime call already accounts for them).
  // Launches are reported at the exit of the call the application made, when it succeeded.
  // A runtime launch's arguments are read from the driver launch it goes through (CUfunction +
  // kernelParams), never by asking the runtime: a runtime call from a callback would leave
  // its error as the application's last error (cudaGetFuncBySymbol did: issue 9).
  Output on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* cb);

  // Activity records: CONCURRENT_KERNEL / KERNEL (CUpti_ActivityKernel10) and MEMORY2
  // (CUpti_ActivityMemory4, device memory only).
  static std::optional<KernelTime> kernel_time(const CUpti_Activity* rec);
  static std::optional<MemOp> memory_record(const CUpti_Activity* rec);

  // Callback ids this translator understands (to enable them in the subscriber).
  static const std::vector<CUpti_CallbackId>& runtime_cbids();
  static const std::vector<CUpti_CallbackId>& driver_cbids();

 private:
  // on_callback by domain, and the launch paths (what each reads is said in the .cpp).
  Output on_runtime(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter);
  Output on_driver(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter);
  void runtime_launch_enter(CUpti_CallbackId id, const CUpti_CallbackData* cb);
  Output runtime_launch_exit(CUpti_CallbackId id, const CUpti_CallbackData* cb);
  Output driver_launch(CUpti_CallbackId id, const CUpti_CallbackData* cb, bool enter);
  // cuMemCreate / cuMemRelease: the handles' sizes until they are mapped; true when `id` was one.
  bool vmm_handle_call(CUpti_CallbackId id, const CUpti_CallbackData* cb);
  void pointer_args(const void* handle, KernelHandle kind, void** args, void** extra, LaunchInfo& out);
  void name_into(const char* symbol, const void* handle, KernelHandle kind, std::string& out) const;
  void name_args(const char* symbol, void** args, LaunchInfo& out);
  void chevron_args(const void* kernel, void** args, LaunchInfo& info, Output& out);
  std::atomic<int> chevron_state_{0};  // __cudaLaunchKernel's layout: 0 unchecked, 1 read, 2 off
  ParamLayoutFn layout_;
  KernelNameFn name_;
  std::mutex mu_;
  std::unordered_map<uint64_t, uint64_t> vmm_handles_;  // cuMemCreate handle -> size
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // param_sizes_from_name() by mangled name (nullopt: not a C++ name)
  std::unordered_map<std::string, std::optional<std::vector<size_t>>, NameHash, std::equal_to<>> name_sizes_;
};

// Live device allocations, signed byte deltas, current and peak usage.
class MemoryTracker {
 public:
  // Returns the signed byte delta to record (0: nothing to record, e.g. a duplicate or a free
  // of an unknown address).
  int64_t apply(const MemOp& op);
  int64_t live_bytes() const { return live_; }
  int64_t peak_bytes() const { return peak_; }
  size_t live_allocations() const { return allocs_.size(); }

 private:
  std::map<uint64_t, uint64_t> allocs_;
  int64_t live_ = 0, peak_ = 0;
};

// Tables whose memory the launch's pointer arguments point into (sorted, unique).
std::vector<std::string> tables_of_launch(const LaunchInfo& l, const wire::AddressIndex& idx);
// The same as names inside `idx` (sorted by name, unique), into `out` (cleared first; its
// capacity kept: no allocation once it has held as many).
void tables_of_launch(const LaunchInfo& l, const wire::AddressIndex& idx, std::vector<const std::string*>& out);

}  // namespace edo::capture
