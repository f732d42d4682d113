// Fake libcupti.so.13 (see fake_cuda.h): one subscriber, callbacks for the enabled
// (domain, cbid) pairs with real CUpti_CallbackData, activity buffers the subscriber provides
// filled with real CUpti_ActivityKernel10 / CUpti_ActivityMemory4 records at flush.
// FAKE_CUPTI_HELD_BY=<tool>: another tool holds the subscription (cuptiSubscribe fails with
// CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; cuptiSubscribe_v2 names the tool).
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fake_cuda.h"

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

std::mutex mu;
CUpti_CallbackFunc subscriber = nullptr;
void* subscriber_data = nullptr;
std::set<std::pair<int, unsigned>> enabled;  // (domain, cbid)
std::set<int> enabled_kinds;
CUpti_BuffersCallbackRequestFunc buffer_request = nullptr;
CUpti_BuffersCallbackCompleteFunc buffer_complete = nullptr;
std::vector<CUpti_ActivityKernel10> kernels;    // waiting for a flush
// Kernel names owned by CUPTI, as CUpti_ActivityKernel10::name is ("shared across all activity
// records representing the same kernel", cupti_activity.h:3069-3073): a record keeps its name
// when the driver reuses the kernel's handle for another kernel after a module unload.
std::set<std::string, std::less<>> names;  // mu (found without a copy: no allocation per record)
std::vector<CUpti_ActivityMemory4> memories;
int subscriber_token;

void on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site, const char* function,
                 const void* params, void* rv, const char* symbol, uint32_t correlation) {
  CUpti_CallbackFunc cb;
  void* data;
  {
    std::lock_guard<std::mutex> lk(mu);
    if (!subscriber || !enabled.count({int(domain), unsigned(cbid)})) return;
    cb = subscriber;
    data = subscriber_data;
  }
  static thread_local uint64_t correlation_data = 0;
  CUcontext ctx = nullptr;
  cuCtxGetCurrent(&ctx);
  CUpti_CallbackData d{};
  d.callbackSite = site;
  d.functionName = function;
  d.functionParams = params;
  d.functionReturnValue = rv;
  d.symbolName = symbol;
  d.context = ctx;
  d.contextUid = 1;
  d.correlationData = &correlation_data;
  d.correlationId = correlation;
  cb(data, domain, cbid, &d);
}

// CUPTI's worker thread: it delivers a buffer once a buffer's worth of records waits (real
// CUPTI writes records into the client's buffer as they happen and its worker returns full
// buffers, cupti_activity.h:8058-8072), not only at cuptiActivityFlushAll: a job that launches
// many kernels between the tool's flushes never has more than about one buffer waiting.
// Leaked: its destructor at exit would wait for the worker, which waits on it forever.
std::condition_variable& worker_cv = *new std::condition_variable();
bool worker_wake = false, worker_started = false;  // mu
size_t buffer_bytes = size_t{8} << 20;  // mu: the size of the client's last buffer
void worker_loop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lk(mu);
      worker_cv.wait(lk, [] { return worker_wake; });
      worker_wake = false;
    }
    cuptiActivityFlushAll(0);
  }
}
void wake_worker_if_full() {  // mu held
  if (kernels.size() * sizeof(CUpti_ActivityKernel10) + memories.size() * sizeof(CUpti_ActivityMemory4) < buffer_bytes)
    return;
  worker_wake = true;
  if (!worker_started) {
    worker_started = true;
    std::thread(worker_loop).detach();
  }
  worker_cv.notify_one();
}

void on_kernel(const char* name, uint64_t start, uint64_t end, uint32_t correlation) {
  std::lock_guard<std::mutex> lk(mu);
  if (!enabled_kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return;
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  auto known = names.find(std::string_view(name));
  k.name = (known != names.end() ? known : names.insert(name).first)->c_str();
  k.start = start;
  k.end = end;
  k.correlationId = correlation;
  kernels.push_back(k);
  wake_worker_if_full();
}

void on_memory(bool alloc, uint64_t address, uint64_t bytes, uint32_t correlation) {
  std::lock_guard<std::mutex> lk(mu);
  if (!enabled_kinds.count(CUPTI_ACTIVITY_KIND_MEMORY2)) return;
  CUpti_ActivityMemory4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType =
      alloc ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.address = address;
  m.bytes = bytes;
  m.correlationId = correlation;
  memories.push_back(m);
  wake_worker_if_full();
}

void deliver_now() { cuptiActivityFlushAll(0); }

const fake_cuda_tool the_tool{on_callback, on_kernel, on_memory, deliver_now};

size_t record_size(const CUpti_Activity* r) {
  return r->kind == CUPTI_ACTIVITY_KIND_MEMORY2 ? sizeof(CUpti_ActivityMemory4) : sizeof(CUpti_ActivityKernel10);
}

CUptiResult subscribe(CUpti_SubscriberHandle* sub, CUpti_CallbackFunc cb, void* data, char* other, size_t other_size) {
  if (!sub || !cb) return CUPTI_ERROR_INVALID_PARAMETER;
  const char* held = std::getenv("FAKE_CUPTI_HELD_BY");
  std::lock_guard<std::mutex> lk(mu);
  if ((held && *held) || subscriber) {
    if (other && other_size) {
      std::strncpy(other, held && *held ? held : "another CUPTI subscriber", other_size - 1);
      other[other_size - 1] = '\0';
    }
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  subscriber = cb;
  subscriber_data = data;
  *sub = reinterpret_cast<CUpti_SubscriberHandle>(&subscriber_token);
  fake_cuda_set_tool(&the_tool);
  return CUPTI_SUCCESS;
}

}  // namespace

FAKE_API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* sub, CUpti_CallbackFunc cb, void* data) {
  return subscribe(sub, cb, data, nullptr, 0);
}

FAKE_API CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* sub, CUpti_CallbackFunc cb, void* data,
                                       CUpti_SubscriberParams* p) {
  if (p && p->structSize < CUpti_SubscriberParams_STRUCT_SIZE) return CUPTI_ERROR_INVALID_PARAMETER;
  return subscribe(sub, cb, data, p ? p->oldSubscriberName : nullptr, p ? p->oldSubscriberSize : 0);
}

FAKE_API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  std::lock_guard<std::mutex> lk(mu);
  subscriber = nullptr;
  enabled.clear();
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                                         CUpti_CallbackId cbid) {
  std::lock_guard<std::mutex> lk(mu);
  if (!subscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable) enabled.insert({int(domain), unsigned(cbid)});
  else enabled.erase({int(domain), unsigned(cbid)});
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  std::lock_guard<std::mutex> lk(mu);
  enabled_kinds.insert(kind);
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  std::lock_guard<std::mutex> lk(mu);
  enabled_kinds.erase(kind);
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                    CUpti_BuffersCallbackCompleteFunc done) {
  std::lock_guard<std::mutex> lk(mu);
  buffer_request = req;
  buffer_complete = done;
  return CUPTI_SUCCESS;
}

// Hands every waiting record to the subscriber, in buffers it provides.
FAKE_API CUptiResult cuptiActivityFlushAll(uint32_t) {
  std::vector<CUpti_ActivityKernel10> ks;
  std::vector<CUpti_ActivityMemory4> ms;
  CUpti_BuffersCallbackRequestFunc req;
  CUpti_BuffersCallbackCompleteFunc done;
  {
    std::lock_guard<std::mutex> lk(mu);
    ks.swap(kernels);
    ms.swap(memories);
    req = buffer_request;
    done = buffer_complete;
  }
  if (!req || !done) return CUPTI_SUCCESS;
  size_t ki = 0, mi = 0;
  while (ki < ks.size() || mi < ms.size()) {
    uint8_t* buf = nullptr;
    size_t size = 0, max_records = 0;
    req(&buf, &size, &max_records);
    if (!buf) return CUPTI_ERROR_UNKNOWN;  // records dropped
    {
      std::lock_guard<std::mutex> lk(mu);
      if (size) buffer_bytes = size;
    }
    size_t used = 0;
    while (mi < ms.size() && used + sizeof(CUpti_ActivityMemory4) <= size) {
      std::memcpy(buf + used, &ms[mi++], sizeof(CUpti_ActivityMemory4));
      used += sizeof(CUpti_ActivityMemory4);
    }
    while (ki < ks.size() && used + sizeof(CUpti_ActivityKernel10) <= size) {
      std::memcpy(buf + used, &ks[ki++], sizeof(CUpti_ActivityKernel10));
      used += sizeof(CUpti_ActivityKernel10);
    }
    done(nullptr, 0, buf, size, used);
  }
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t off = 0;
  if (*record) off = size_t(reinterpret_cast<uint8_t*>(*record) - buffer) + record_size(*record);
  if (off >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + off);
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
  *dropped = 0;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiGetResultString(CUptiResult r, const char** s) {
  if (!s) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (r) {
    case CUPTI_SUCCESS: *s = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *s = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
    default: *s = "CUPTI_ERROR_UNKNOWN"; break;
  }
  return CUPTI_SUCCESS;
}
