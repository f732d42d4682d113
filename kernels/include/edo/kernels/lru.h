// Exact LRU over row ids with a fixed number of cache slots; shared by the CPU and CUDA
// offload tables. It owns no row data: it maintains a row -> slot map (an external int32
// array, -1 = not cached) and reports which rows were brought into which slot.
#pragma once

#include <cstdint>
#include <vector>

namespace edo::kernels {

class LruCache {
 public:
  struct Fill {
    std::int64_t row;
    std::int32_t slot;
  };
  LruCache(std::uint64_t slots, std::int32_t* slot_of_row) : slot_of_row_(slot_of_row), owner_(slots, -1), prev_(slots, -1), next_(slots, -1) {}

  // Processes accesses in order; appends the rows to copy into the cache. Returns hits.
  std::uint64_t access(const std::int64_t* idx, std::int64_t n, std::vector<Fill>& fills) {
    std::uint64_t hits = 0;
    const std::uint64_t cap = owner_.size();
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t r = idx[i];
      std::int32_t s = slot_of_row_[r];
      if (s >= 0) {
        ++hits;
        unlink(s);
      } else {
        if (cap == 0) continue;
        if (used_ < cap) {
          s = static_cast<std::int32_t>(used_++);
        } else {
          s = tail_;
          unlink(s);
          slot_of_row_[owner_[s]] = -1;
        }
        owner_[s] = r;
        slot_of_row_[r] = s;
        fills.push_back({r, s});
      }
      push_front(s);
    }
    return hits;
  }

 private:
  void unlink(std::int32_t s) {
    if (prev_[s] >= 0) next_[prev_[s]] = next_[s];
    else head_ = next_[s];
    if (next_[s] >= 0) prev_[next_[s]] = prev_[s];
    else tail_ = prev_[s];
    prev_[s] = next_[s] = -1;
  }
  void push_front(std::int32_t s) {
    prev_[s] = -1;
    next_[s] = head_;
    if (head_ >= 0) prev_[head_] = s;
    head_ = s;
    if (tail_ < 0) tail_ = s;
  }
  std::int32_t* slot_of_row_;
  std::vector<std::int64_t> owner_;
  std::vector<std::int32_t> prev_, next_;
  std::int32_t head_ = -1, tail_ = -1;
  std::uint64_t used_ = 0;
};

}  // namespace edo::kernels
