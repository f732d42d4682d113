// Replaces the global operator new/delete of the test binary (see counting_allocator.h).
// Each block carries its size in a 16-byte header so that frees can be counted exactly.
#include "counting_allocator.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

constexpr size_t kHeader = 16;  // keeps the user pointer 16-byte aligned
std::atomic<size_t> g_live{0}, g_start{0}, g_peak{0}, g_largest{0}, g_requests{0};

void* counted_alloc(size_t n) {
  void* p = std::malloc(n + kHeader);
  if (!p) throw std::bad_alloc();
  *static_cast<size_t*>(p) = n;
  const size_t live = g_live.fetch_add(n) + n;
  size_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
  size_t largest = g_largest.load();
  while (n > largest && !g_largest.compare_exchange_weak(largest, n)) {
  }
  g_requests.fetch_add(1);
  return static_cast<char*>(p) + kHeader;
}

void counted_free(void* user) {
  if (!user) return;
  void* p = static_cast<char*>(user) - kHeader;
  g_live.fetch_sub(*static_cast<size_t*>(p));
  std::free(p);
}

}  // namespace

void* operator new(size_t n) { return counted_alloc(n); }
void* operator new[](size_t n) { return counted_alloc(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, size_t) noexcept { counted_free(p); }
void operator delete[](void* p, size_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }

namespace edo::test {

void reset_allocation_stats() {
  const size_t live = g_live.load();
  g_start = live;
  g_peak = live;
  g_largest = 0;
  g_requests = 0;
}

AllocationStats allocation_stats() {
  AllocationStats s;
  s.peak_live_above_start = g_peak.load() - g_start.load();
  s.largest_request = g_largest.load();
  s.requests = g_requests.load();
  return s;
}

}  // namespace edo::test
