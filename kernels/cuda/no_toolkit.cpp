// edo_kernels_cuda in a build without the CUDA toolkit: every entry point says so, in the
// one-line "no CUDA device: ..." form the CLI and the GPU tests expect.
#include <stdexcept>

#include "edo/kernels/cuda.h"

namespace edo::kernels::cuda {
namespace {
[[noreturn]] void none() { throw std::runtime_error(device_status()); }
}  // namespace

std::string device_status() {
  return "no CUDA device: this edo was built without the CUDA toolkit, so it cannot use a GPU "
         "(rebuild with the toolkit installed, e.g. scripts/gpu-bundle.sh)";
}
std::string device_description() { return device_status(); }
std::unique_ptr<Backend> make_cuda_backend() { none(); }
DeviceInfo device_info() { none(); }
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
double h2d_copy_gbs(std::uint64_t, int) { none(); }

}  // namespace edo::kernels::cuda
