// NVTX v3 injection: the NVTX loader in the job dlopen()s NVTX_INJECTION64_PATH (this
// library, set by `edo record`) and calls InitializeInjectionNvtx2; we fill the core and
// core2 (domain) callback tables. Ranges become per-name counts and durations; lookups and
// allocations inside a range are attributed to the innermost one.
#include <nvtx3/nvToolsExt.h>

#include <cstring>
#include <cwchar>
#include <mutex>
#include <string>
#include <unordered_map>

#include "process.h"
#include "events.h"
#include "nvtx_ranges.h"
#include "tracer_log.h"

using namespace edo::capture;

namespace {

using Domain = NvtxNames::Domain;

std::string narrow(const wchar_t* w) {
  std::string s;
  if (!w) return s;
  for (; *w && s.size() < 4096; ++w) s.push_back(*w < 128 ? char(*w) : '?');
  return s;
}

std::string message_of(const nvtxEventAttributes_t* a) {
  if (!a) return "(unnamed)";
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii ? a->message.ascii : "(unnamed)";
    case NVTX_MESSAGE_TYPE_UNICODE: return narrow(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return a->message.registered ? reinterpret_cast<const char*>(a->message.registered) : "(unnamed)";
    default: return "(unnamed)";
  }
}

std::string qualified(nvtxDomainHandle_t d, std::string name) {
  if (!d) return name;
  return reinterpret_cast<const Domain*>(d)->name + "::" + name;
}

// ---- core ----
void NVTX_API MarkEx(const nvtxEventAttributes_t*) {}
void NVTX_API MarkA(const char*) {}
void NVTX_API MarkW(const wchar_t*) {}
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) { return range_start(message_of(a)); }
nvtxRangeId_t NVTX_API RangeStartA(const char* m) { return range_start(m ? m : "(unnamed)"); }
nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* m) { return range_start(narrow(m)); }
void NVTX_API RangeEnd(nvtxRangeId_t id) { range_end(id); }
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) { range_push(message_of(a)); return 0; }
int NVTX_API RangePushA(const char* m) { range_push(m ? m : "(unnamed)"); return 0; }
int NVTX_API RangePushW(const wchar_t* m) { range_push(narrow(m)); return 0; }
int NVTX_API RangePop() { range_pop(); return 0; }
void NVTX_API NameCategoryA(uint32_t, const char*) {}
void NVTX_API NameCategoryW(uint32_t, const wchar_t*) {}
void NVTX_API NameOsThreadA(uint32_t, const char*) {}
void NVTX_API NameOsThreadW(uint32_t, const wchar_t*) {}

// ---- core2 (domains) ----
void NVTX_API DomainMarkEx(nvtxDomainHandle_t, const nvtxEventAttributes_t*) {}
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return range_start(qualified(d, message_of(a)));
}
void NVTX_API DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { range_end(id); }
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  range_push(qualified(d, message_of(a)));
  return 0;
}
int NVTX_API DomainRangePop(nvtxDomainHandle_t) { range_pop(); return 0; }
nvtxResourceHandle_t NVTX_API DomainResourceCreate(nvtxDomainHandle_t, nvtxResourceAttributes_t*) { return nullptr; }
void NVTX_API DomainResourceDestroy(nvtxResourceHandle_t) {}
void NVTX_API DomainNameCategoryA(nvtxDomainHandle_t, uint32_t, const char*) {}
void NVTX_API DomainNameCategoryW(nvtxDomainHandle_t, uint32_t, const wchar_t*) {}
// Registered strings and domains are interned for the process (Process::nvtx_names: handles
// live as long as the process, a forked child's too; the same name in a loop does not grow
// memory).
nvtxStringHandle_t intern(const std::string& s) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(process()->nvtx_names.string(s)));
}
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t, const char* s) { return intern(s ? s : ""); }
nvtxStringHandle_t NVTX_API DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) { return intern(narrow(s)); }
nvtxDomainHandle_t intern_domain(const std::string& name) {
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<Domain*>(process()->nvtx_names.domain(name)));
}
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) { return intern_domain(name ? name : ""); }
nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) { return intern_domain(narrow(name)); }
void NVTX_API DomainDestroy(nvtxDomainHandle_t) {}  // kept alive: ranges may still refer to it
void NVTX_API Initialize(const void*) {}

template <class F>
void put(NvtxFunctionTable table, unsigned size, unsigned id, F f) {
  if (id <= size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(f);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  if (!tracer_active() || !get) return 0;  // 0: NVTX calls become no-ops
  auto* cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (!cb || !cb->GetModuleFunctionTable) return 0;
  NvtxFunctionTable t = nullptr;
  unsigned size = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &size) && t) {
    put(t, size, NVTX_CBID_CORE_MarkEx, MarkEx);
    put(t, size, NVTX_CBID_CORE_MarkA, MarkA);
    put(t, size, NVTX_CBID_CORE_MarkW, MarkW);
    put(t, size, NVTX_CBID_CORE_RangeStartEx, RangeStartEx);
    put(t, size, NVTX_CBID_CORE_RangeStartA, RangeStartA);
    put(t, size, NVTX_CBID_CORE_RangeStartW, RangeStartW);
    put(t, size, NVTX_CBID_CORE_RangeEnd, RangeEnd);
    put(t, size, NVTX_CBID_CORE_RangePushEx, RangePushEx);
    put(t, size, NVTX_CBID_CORE_RangePushA, RangePushA);
    put(t, size, NVTX_CBID_CORE_RangePushW, RangePushW);
    put(t, size, NVTX_CBID_CORE_RangePop, RangePop);
    put(t, size, NVTX_CBID_CORE_NameCategoryA, NameCategoryA);
    put(t, size, NVTX_CBID_CORE_NameCategoryW, NameCategoryW);
    put(t, size, NVTX_CBID_CORE_NameOsThreadA, NameOsThreadA);
    put(t, size, NVTX_CBID_CORE_NameOsThreadW, NameOsThreadW);
  }
  t = nullptr;
  size = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &size) && t) {
    put(t, size, NVTX_CBID_CORE2_DomainMarkEx, DomainMarkEx);
    put(t, size, NVTX_CBID_CORE2_DomainRangeStartEx, DomainRangeStartEx);
    put(t, size, NVTX_CBID_CORE2_DomainRangeEnd, DomainRangeEnd);
    put(t, size, NVTX_CBID_CORE2_DomainRangePushEx, DomainRangePushEx);
    put(t, size, NVTX_CBID_CORE2_DomainRangePop, DomainRangePop);
    put(t, size, NVTX_CBID_CORE2_DomainResourceCreate, DomainResourceCreate);
    put(t, size, NVTX_CBID_CORE2_DomainResourceDestroy, DomainResourceDestroy);
    put(t, size, NVTX_CBID_CORE2_DomainNameCategoryA, DomainNameCategoryA);
    put(t, size, NVTX_CBID_CORE2_DomainNameCategoryW, DomainNameCategoryW);
    put(t, size, NVTX_CBID_CORE2_DomainRegisterStringA, DomainRegisterStringA);
    put(t, size, NVTX_CBID_CORE2_DomainRegisterStringW, DomainRegisterStringW);
    put(t, size, NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
    put(t, size, NVTX_CBID_CORE2_DomainCreateW, DomainCreateW);
    put(t, size, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
    put(t, size, NVTX_CBID_CORE2_Initialize, Initialize);
  }
  tracer_verbose("NVTX ranges are recorded (NVTX injection)");
  return 1;
}
