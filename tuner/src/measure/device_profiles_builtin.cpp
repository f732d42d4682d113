// The device profiles edo ships (edo/tuner/device_profile.h): what `edo tune` models a GPU's
// lookup times with when the recording is of a GPU job and no GPU is here. Each figure says
// whether it was measured; add a measured GPU with `edo bench --backend cuda --save-device NAME`.
#include "edo/tuner/device_profile.h"

#include "edo/model/tune_reasons.h"

namespace edo::tuner {

const std::vector<DeviceProfile>& builtin_devices() {
  static const std::vector<DeviceProfile> devices = [] {
    std::vector<DeviceProfile> v;
    DeviceProfile h200;
    h200.name = "NVIDIA H200";
    h200.source = model::command_words().say({.code = model::Reason::kBenchBackend, .name = "cuda"}) +
                  " on an NVIDIA H200, 2026-11-30: fp32 gather 8.25 G rows/s of 512 B (dim 128, sector bound), "
                  "device-to-device copy 4222 GB/s";
    h200.sector_bytes = 32;
    // 8.25e9 rows/s x 16 sectors = 132 G sectors/s = 4224 GB/s of sectors: the gather ran at
    // the copy's bandwidth (issue 19, "an H200 measured 8.25 G fp32 rows/s sector bound").
    h200.gather_rows_per_s = 8.25e9;
    h200.gather_row_bytes = 512;
    h200.memory_gbs = 4222;
    // Shared memory as edo bench derives it from the device's attributes (kernels/cuda.h
    // DeviceInfo::onchip_gbs: SMs x clock x 128 B): 132 SMs x 1.98 GHz x 128 B.
    h200.onchip_gbs = 132 * 1.98 * 128;
    h200.host_link_gbs = 64;
    h200.host_link_measured = false;
    h200.host_link_basis = "PCIe Gen5 x16 per direction: nominal, not measured";
    h200.launch_us = 3;
    h200.launch_measured = false;
    h200.launch_basis = "nominal, not measured";
    v.push_back(h200);
    return v;
  }();
  return devices;
}

}  // namespace edo::tuner
