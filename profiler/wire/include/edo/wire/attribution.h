// Attribution of device addresses to embedding tables by address range, shared by the
// tracer (kernel pointer arguments, on every launch) and the collector (memory timeline).
//
// An AddressIndex is immutable once built (AddressIndex::Builder): any number of threads may
// query one at the same time without locks, and the tracer swaps in a new one (held by a
// shared_ptr<const AddressIndex>) when a table is registered. Both queries are O(log n): the
// ranges are flattened at build time into non-overlapping segments, each owned by the range
// that find() must answer for it.
#pragma once

#include <cstdint>
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

  class Builder {
   public:
    Builder() = default;
    // Starts from the ranges of an existing index (to add more).
    explicit Builder(const AddressIndex& from) : entries_(from.entries_) {}
    // A range of `bytes` bytes at `begin`. A second range at the same base is a tie: the
    // memory stays with the name added first. Empty ranges and null bases are ignored.
    void add(uint64_t begin, uint64_t bytes, std::string name);
    AddressIndex build() &&;

   private:
    std::vector<Entry> entries_;
  };

  AddressIndex() = default;

  bool empty() const { return entries_.empty(); }
  // Sorted by begin, one per base address.
  const std::vector<Entry>& entries() const { return entries_; }

  // The range that contains `address` (when ranges nest or overlap, the one that begins
  // last at or before it), or nullptr.
  const Entry* find(uint64_t address) const;

  // The table an allocation [address, address+bytes) belongs to: the range containing its
  // first byte, else the first range whose base lies inside the allocation (caching
  // allocators hand out segments that contain tables). nullptr when none.
  const Entry* attribute(uint64_t address, uint64_t bytes) const;

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  std::vector<Entry> entries_;
  // Non-overlapping segments [seg_begin_[i], seg_begin_[i+1]) and their owners (index into
  // entries_, or kNone for a gap); the last segment, past every range, has no owner.
  std::vector<uint64_t> seg_begin_;
  std::vector<uint32_t> seg_owner_;
};

}  // namespace edo::wire
