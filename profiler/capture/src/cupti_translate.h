// CUPTI structs -> edo events: the thin, CPU-testable translation layer. No CUPTI or CUDA
// function is called here; tests feed hand-built CUpti_CallbackData / *_params structs /
// activity records (Kineto style).
#pragma once

#include <cupti.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
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
  std::vector<uint64_t> pointers;  // 8-byte argument values (candidate device pointers)
  uint64_t stream = 0;
  uint32_t correlation = 0;
};

struct KernelTime {
  std::string name;
  uint64_t ns = 0;
  uint32_t correlation = 0;
};

// Parameter layout of a kernel: (offset, size) of parameter `index`, false past the last one.
// `driver` tells whether `func` is a CUfunction (driver launch) or a runtime host-side launch function.
using ParamInfoFn = std::function<bool(const void* func, bool driver, size_t index, size_t* offset, size_t* size)>;

std::string demangle(const char* name);

class CuptiTranslator {
 public:
  explicit CuptiTranslator(ParamInfoFn param_info = nullptr) : param_info_(std::move(param_info)) {}

  struct Output {
    std::vector<MemOp> mem;
    std::optional<LaunchInfo> launch;
  };
  // RUNTIME_API and DRIVER_API callbacks. Allocation results are read at API exit (and only
  // when the call succeeded); driver calls made inside a traced runtime call on the same
  // thread are ignored (the runtime call already accounts for them).
  Output on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* cb);

  // Activity records: CONCURRENT_KERNEL / KERNEL (CUpti_ActivityKernel10) and MEMORY2
  // (CUpti_ActivityMemory4, device memory only).
  static std::optional<KernelTime> kernel_time(const CUpti_Activity* rec);
  static std::optional<MemOp> memory_record(const CUpti_Activity* rec);

  // Callback ids this translator understands (to enable them in the subscriber).
  static const std::vector<CUpti_CallbackId>& runtime_cbids();
  static const std::vector<CUpti_CallbackId>& driver_cbids();

 private:
  void pointer_args(const void* func, bool driver, void** args, void** extra, LaunchInfo& out);
  ParamInfoFn param_info_;
  std::mutex mu_;
  std::unordered_map<uint64_t, uint64_t> vmm_handles_;  // cuMemCreate handle -> size
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

}  // namespace edo::capture
