// Attribution of device addresses to embedding tables by address range, shared by the
// tracer (kernel pointer arguments) and the collector (memory timeline).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace edo::wire {

class AddressIndex {
 public:
  struct Entry {
    uint64_t begin = 0;
    uint64_t end = 0;  // one past the last byte
    std::string name;
  };

  void add(uint64_t begin, uint64_t bytes, std::string name) {
    if (bytes == 0 || begin == 0) return;
    for (const Entry& e : entries_)
      if (e.begin == begin) return;  // a tie: the memory stays with the first name
    entries_.push_back({begin, begin + bytes, std::move(name)});
    sorted_ = false;
  }
  void finalize() {
    std::stable_sort(entries_.begin(), entries_.end(),
              [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
    sorted_ = true;
  }
  bool empty() const { return entries_.empty(); }
  const std::vector<Entry>& entries() const { return entries_; }

  // The table whose memory contains `address`, or nullptr.
  const Entry* find(uint64_t address) const {
    if (!sorted_) const_cast<AddressIndex*>(this)->finalize();
    auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                               [](uint64_t a, const Entry& e) { return a < e.begin; });
    // Walk back over entries starting at or before the address (ties share a base).
    while (it != entries_.begin()) {
      --it;
      if (address >= it->begin && address < it->end) return &*it;
    }
    return nullptr;
  }

  // The table an allocation [address, address+bytes) belongs to: the allocation contains the
  // table's base (caching allocators hand out big segments) or lies inside the table. The
  // first-registered such table wins (a tie shares the same memory).
  const Entry* attribute(uint64_t address, uint64_t bytes) const {
    if (!sorted_) const_cast<AddressIndex*>(this)->finalize();
    if (const Entry* e = find(address)) return e;
    const uint64_t end = address + (bytes ? bytes : 1);
    auto it = std::lower_bound(entries_.begin(), entries_.end(), address,
                               [](const Entry& e, uint64_t a) { return e.begin < a; });
    if (it != entries_.end() && it->begin < end) return &*it;
    return nullptr;
  }

 private:
  std::vector<Entry> entries_;
  bool sorted_ = true;
};

}  // namespace edo::wire
