// Settles on a GPU what the fake CUDA stack (tests/integration/fake_gpu) assumes about runtime
// launches (issue 21.2): whether CUPTI issues driver-API launch callbacks inside the runtime's
// <<<>>> (__cudaLaunchKernel in CUDA 13), cudaLaunchKernel and cudaLaunchKernelExC. A CUPTI
// subscriber of its own (run it without edo) counts the driver callbacks seen between each
// runtime launch's ENTER and EXIT, one line per path:
//   launch_path <api> driver_callbacks_inside <n>
// Exit 77 without a device.
#include <cuda_runtime.h>
#include <cupti.h>

#include <cstdio>
#include <cstring>

namespace {
thread_local int in_runtime_launch = 0;
thread_local int driver_inside = 0;

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (std::strstr(cb->functionName, "Launch") == nullptr) return;
    in_runtime_launch += cb->callbackSite == CUPTI_API_ENTER ? 1 : -1;
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && in_runtime_launch > 0 && cb->callbackSite == CUPTI_API_ENTER) {
    ++driver_inside;
  }
}

__global__ void bump(int* p) { atomicAdd(p, 1); }
}  // namespace

int main() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("no CUDA device\n");
    return 77;
  }
  CUpti_SubscriberHandle sub;
  if (cuptiSubscribe(&sub, on_callback, nullptr) != CUPTI_SUCCESS) return 1;
  cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
  cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
  int* p = nullptr;
  cudaMalloc(&p, sizeof(int));
  void* args[] = {&p};
  auto probe = [&](const char* api, auto launch) {
    driver_inside = 0;
    launch();
    cudaDeviceSynchronize();
    std::printf("launch_path %s driver_callbacks_inside %d\n", api, driver_inside);
  };
  probe("<<<>>>", [&] { bump<<<1, 1>>>(p); });
  probe("cudaLaunchKernel", [&] { cudaLaunchKernel(reinterpret_cast<const void*>(bump), dim3(1), dim3(1), args, 0, nullptr); });
  probe("cudaLaunchKernelExC", [&] {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(1);
    cfg.blockDim = dim3(1);
    cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(bump), args);
  });
  cuptiUnsubscribe(sub);
  cudaFree(p);
  return 0;
}
