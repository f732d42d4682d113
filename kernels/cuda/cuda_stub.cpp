// The CUDA entry points of a build without a CUDA toolkit: every one says so.
#include <stdexcept>

#include "kernels/cuda/cuda_backend.h"

namespace edo::kernels::cuda {
namespace {
[[noreturn]] void none() { throw std::runtime_error(device_status()); }
}  // namespace

std::string device_status() { return "no CUDA device: this build has no CUDA backend (built without a CUDA toolkit)"; }
std::string device_description() { return device_status(); }
DeviceBuffer::DeviceBuffer(std::uint64_t) { none(); }
DeviceBuffer::~DeviceBuffer() = default;
DeviceBuffer::DeviceBuffer(DeviceBuffer&&) noexcept = default;
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&&) noexcept = default;
void DeviceBuffer::upload(const void*, std::uint64_t) { none(); }
void DeviceBuffer::download(void*, std::uint64_t) const { none(); }
void DeviceBuffer::fill_nan() { none(); }
std::unique_ptr<DeviceTable> DeviceTable::upload(const EncodedTable&) { none(); }
void gather_host(DeviceTable&, const std::int64_t*, std::int64_t, float*) { none(); }
void bag_host(DeviceTable&, const std::int64_t*, std::int64_t, const std::int64_t*, std::int64_t, const float*, Pooling, float*) { none(); }
double d2d_copy_gbs(std::uint64_t, int) { none(); }
DeviceTimes time_lookups(const EncodedTable&, const std::vector<std::vector<std::int64_t>>&, std::uint32_t, int, int) { none(); }

}  // namespace edo::kernels::cuda
