// The device model (docs/tuning.md "Device model"): a candidate's lookup time on a GPU that is
// not here, from the memory traffic of one lookup and the device's figures
// (edo/tuner/device_profile.h):
//
//   per lookup  sectors read at random x sector bytes / the device's sector rate
//             + streamed bytes (the int64 index, the pooled fp32 output row, an LRU's
//               workspace) / memory bandwidth
//             + on-chip bytes (PQ codebook, QR remainder, low rank's B) / on-chip bandwidth
//             + bytes over the host link (offload misses) / host-link bandwidth
//   per step    lookups per step x the above + kernel launches x launch overhead
//
// The traffic is the kernels' own layout (kernels/include/edo/kernels/formats/*.h): a row
// read touches whole sectors (a 72-byte int8 row with its scale and bias at an 80-byte stride
// touches 3 sectors), offload reads hits from the device cache and misses over the host link.
// Each lookup is its own bag, as the tuner times them on a backend (tuner/src/measure/measure.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "edo/tuner/device_profile.h"

namespace edo::tuner {

struct LookupTraffic {
  double sectors = 0;       // random sectors of device memory read per lookup
  double stream_bytes = 0;  // coalesced bytes per lookup (index, output, workspace)
  double onchip_bytes = 0;  // bytes per lookup from shared memory / L1
  double host_bytes = 0;    // bytes per lookup over the host link
  int launches = 1;         // kernels per step
  std::string basis;        // one line: what was counted
};

// Mean number of `sector`-byte units a read of `bytes` bytes touches, reads starting at
// multiples of `stride` from a sector-aligned base (averaged over the offsets that recur).
double sectors_touched(double bytes, double stride, double sector);

// The traffic of one lookup of a table of `dim` columns in the kernels strategy `spec`
// ("fp32", "int8", "pq:m=8", "offload:cache=0.1:policy=lru", ...). `hit_rate`: offload's
// cache hit rate (ignored otherwise). Throws std::invalid_argument for an unknown strategy.
LookupTraffic lookup_traffic(const std::string& spec, uint32_t dim, double hit_rate, double sector_bytes = 32);

// Microseconds per step on `device` for `lookups_per_step` lookups with this traffic.
double modelled_step_us(const LookupTraffic& traffic, double lookups_per_step, const DeviceProfile& device);

}  // namespace edo::tuner
