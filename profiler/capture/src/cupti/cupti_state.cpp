// The CUPTI side's owned state (cupti_state.h): parameter layouts from the driver, spare
// activity buffers, a run's objects.
#include "cupti_state.h"

#include <cstdlib>

#include "cuda_driver.h"

namespace edo::capture {
namespace {

// Parameters of a kernel, from cuFuncGetParamInfo / cuKernelGetParamInfo: there is no count,
// so indices are asked until the driver says the index is past the last one.
bool query_layout(const Driver& drv, const void* h, KernelHandle kind, ParamLayout& out) {
  out.clear();
  for (size_t i = 0; i < 4096; ++i) {
    size_t off = 0, size = 0;
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    if (kind == KernelHandle::kFunction && drv.cuFuncGetParamInfo)
      r = drv.cuFuncGetParamInfo(static_cast<CUfunction>(const_cast<void*>(h)), i, &off, &size);
    else if (kind == KernelHandle::kKernel && drv.cuKernelGetParamInfo)
      r = drv.cuKernelGetParamInfo(static_cast<CUkernel>(const_cast<void*>(h)), i, &off, &size);
    if (r == CUDA_ERROR_INVALID_VALUE && i > 0) return true;  // past the last parameter
    if (r == CUDA_ERROR_INVALID_VALUE && i == 0) return true;  // a kernel without parameters
    if (r != CUDA_SUCCESS) return false;
    out.emplace_back(off, size);
  }
  return true;
}

// The kernel's (mangled) name from the driver, for callbacks that carry no symbol name.
std::string kernel_name(const void* h, KernelHandle kind) {
  const Driver* drv = loaded_driver();
  const char* n = nullptr;
  if (!drv || !h) return {};
  if (kind == KernelHandle::kFunction && drv->cuFuncGetName)
    drv->cuFuncGetName(&n, static_cast<CUfunction>(const_cast<void*>(h)));
  else if (kind == KernelHandle::kKernel && drv->cuKernelGetName)
    drv->cuKernelGetName(&n, static_cast<CUkernel>(const_cast<void*>(h)));
  return n ? n : "";
}

// The calling thread's recent layouts (see LayoutCache): valid for `owner` at `generation`.
struct RecentLayout {
  const LayoutCache* owner = nullptr;
  const void* handle = nullptr;
  KernelHandle kind = KernelHandle::kFunction;
  uint64_t generation = 0;
  std::shared_ptr<const ParamLayout> layout;
};
constexpr size_t kRecentLayouts = 8;
thread_local RecentLayout* tl_layouts = nullptr;  // kRecentLayouts, leaked per thread

}  // namespace

// ---- LayoutCache ------------------------------------------------------------------------------
std::shared_ptr<const ParamLayout> LayoutCache::get(const void* h, KernelHandle kind) {
  if (!h) return nullptr;
  if (!tl_layouts) tl_layouts = new RecentLayout[kRecentLayouts];
  RecentLayout& r = tl_layouts[(reinterpret_cast<uintptr_t>(h) >> 4) % kRecentLayouts];
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  if (r.owner == this && r.handle == h && r.kind == kind && r.generation == generation) return r.layout;
  std::shared_ptr<const ParamLayout> l = shared(h, kind);
  if (l) r = {this, h, kind, generation, l};
  return l;
}

std::shared_ptr<const ParamLayout> LayoutCache::shared(const void* h, KernelHandle kind) {
  const Driver* drv = loaded_driver();
  if (!drv) return nullptr;
  std::lock_guard<std::mutex> lk(mu_);
  auto key = std::make_pair(h, kind);
  auto it = layouts_.find(key);
  if (it != layouts_.end()) return it->second;
  ParamLayout l;
  bool ok = query_layout(*drv, h, kind, l);
  // A CUkernel may be launched through cuLaunchKernel as a CUfunction: cuFuncGetParamInfo then
  // fails, or says CUDA_ERROR_INVALID_VALUE at index 0 as for a kernel without parameters.
  // Ask again as a kernel before concluding either.
  if (kind == KernelHandle::kFunction && (!ok || l.empty())) {
    ParamLayout as_kernel;
    if (query_layout(*drv, h, KernelHandle::kKernel, as_kernel) && (!as_kernel.empty() || !ok)) {
      l = std::move(as_kernel);
      ok = true;
    }
  }
  if (!ok) return nullptr;
  if (layouts_.size() > (1u << 16)) clear_locked();  // bound: JIT compilers make many kernels
  auto shared = std::make_shared<const ParamLayout>(std::move(l));
  layouts_.emplace(key, shared);
  return shared;
}

void LayoutCache::clear() {
  std::lock_guard<std::mutex> lk(mu_);
  clear_locked();
}

void LayoutCache::clear_locked() {
  layouts_.clear();
  generation_.fetch_add(1, std::memory_order_release);
}

// ---- SpareBuffers -----------------------------------------------------------------------------
uint8_t* SpareBuffers::take() {
  std::lock_guard<std::mutex> lk(mu_);
  if (buffers_.empty()) return nullptr;
  uint8_t* b = buffers_.back();
  buffers_.pop_back();
  return b;
}

bool SpareBuffers::keep(uint8_t* b) {
  std::lock_guard<std::mutex> lk(mu_);
  if (buffers_.size() >= kKept) return false;
  buffers_.push_back(b);
  return true;
}

// ---- CuptiRun ---------------------------------------------------------------------------------
// The translator asks this run's layout cache (a lambda holding one pointer: std::function
// keeps it without an allocation, and a launch calls it without one).
CuptiRun::CuptiRun()
    : translator([this](const void* h, KernelHandle kind) { return layouts.get(h, kind); }, kernel_name) {}

}  // namespace edo::capture
