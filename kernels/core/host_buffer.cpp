#include "edo/kernels/host_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include <omp.h>

namespace edo::kernels {

namespace {
constexpr std::size_t kHuge = 2u << 20;
constexpr std::size_t kHugeThreshold = 4u << 20;
}  // namespace

HostBuffer::HostBuffer(std::size_t bytes, bool zero) : n_(bytes) {
  if (bytes == 0) return;
  const bool big = bytes >= kHugeThreshold;
  const std::size_t align = big ? kHuge : 64;
  const std::size_t alloc = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, alloc);
  if (!p) throw std::bad_alloc();
  p_ = static_cast<std::uint8_t*>(p);
  if (big) {
#ifdef MADV_HUGEPAGE
    ::madvise(p, alloc, MADV_HUGEPAGE);  // advisory: failure only costs speed
#endif
  }
  if (zero) {
    if (big) {
      // First touch in parallel (pages land near the threads that will read them).
      const std::int64_t chunks = static_cast<std::int64_t>((alloc + kHuge - 1) / kHuge);
#pragma omp parallel for schedule(static)
      for (std::int64_t c = 0; c < chunks; ++c) {
        const std::size_t off = static_cast<std::size_t>(c) * kHuge;
        std::memset(p_ + off, 0, std::min(kHuge, alloc - off));
      }
    } else {
      std::memset(p_, 0, alloc);
    }
  }
}

HostBuffer::~HostBuffer() { release(); }

void HostBuffer::release() {
  std::free(p_);
  p_ = nullptr;
  n_ = 0;
}

}  // namespace edo::kernels
