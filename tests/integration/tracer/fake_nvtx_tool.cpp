// Another tool's NVTX injection (for `edo record` with NVTX_INJECTION64_PATH already set): it
// counts the core ranges it receives and prints the count at exit, so a test can see that it
// kept receiving them.
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdio>

namespace {
std::atomic<int> ranges{0};
int NVTX_API push(const char*) {
  ranges.fetch_add(1);
  return 0;
}
int NVTX_API pop() { return 0; }
nvtxRangeId_t NVTX_API start(const char*) {
  ranges.fetch_add(1);
  return 1;
}
void NVTX_API end(nvtxRangeId_t) {}
struct Report {
  ~Report() { std::fprintf(stderr, "fake_nvtx_tool ranges %d\n", ranges.load()); }
} report;
}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  auto* cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable t = nullptr;
  unsigned size = 0;
  if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &size) || !t) return 0;
  *t[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(push);
  *t[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(pop);
  *t[NVTX_CBID_CORE_RangeStartA] = reinterpret_cast<NvtxFunctionPointer>(start);
  *t[NVTX_CBID_CORE_RangeEnd] = reinterpret_cast<NvtxFunctionPointer>(end);
  return 1;
}
