// Host memory for encoded tables: 64-byte aligned; large buffers (>= 4 MiB) are 2 MiB
// aligned and advised MADV_HUGEPAGE before first touch, so random row reads do not miss the
// TLB on every row when the kernel's THP mode is "madvise" (the default on many distros).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

namespace edo::kernels {

class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(std::size_t bytes, bool zero = true);
  ~HostBuffer();
  HostBuffer(HostBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  std::uint8_t* data() { return p_; }
  const std::uint8_t* data() const { return p_; }
  template <class T> T* as() { return reinterpret_cast<T*>(p_); }
  template <class T> const T* as() const { return reinterpret_cast<const T*>(p_); }
  std::size_t size() const { return n_; }

 private:
  void release();
  std::uint8_t* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace edo::kernels
