// The tables of launches whose kernel activity record (which carries the GPU time) has not
// arrived yet, by correlation id. A runtime launch is known by two ids (the runtime call's,
// which kernel records carry, and that of the driver launch it went through): either finds it.
//
// put() runs on the job's thread at every launch that reads a table, so it allocates nothing
// while fewer than `preallocated` launches wait for their records (issue 21 §4): entries live
// in a ring and the ids in a direct-mapped index, both made at construction; the tables
// are names inside the address-index snapshot the launch was read with (kept alive by the
// entry), at most kInlineTables of them inline. Past `preallocated` pending launches both
// grow (allocating), up to `capacity`; past that the oldest are forgotten (their time then
// counts for the kernel only, not for its tables) and counted.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cupti_translate.h"
#include "edo/wire/attribution.h"

namespace edo::capture {

class LaunchTables {
 public:
  static constexpr size_t kInlineTables = 4;
  explicit LaunchTables(size_t capacity = size_t{1} << 18, size_t preallocated = size_t{1} << 13);

  // `tables`: names inside `index` (tables_of_launch), n of them.
  void put(const LaunchInfo& l, const std::shared_ptr<const wire::AddressIndex>& index, const std::string* const* tables,
           size_t n);
  // The launch's tables (empty when unknown), forgotten afterwards.
  std::vector<std::string> take(uint32_t correlation);
  uint64_t forgotten() const;
  size_t size() const;  // launches waiting

 private:
  struct Entry {
    uint32_t ids[2] = {0, 0};
    bool taken = true;
    size_t n = 0;
    std::array<const std::string*, kInlineTables> inline_tables{};
    std::vector<const std::string*> more;  // past kInlineTables (rare: its capacity is kept)
    std::shared_ptr<const wire::AddressIndex> index;  // the names' owner
  };
  // The index: slot id % size holds the id and its entry's sequence number. Correlation ids
  // are handed out in order (one per API call), so the ids of waiting launches fill
  // consecutive slots (cheap to reach) and collide only when a launch waits while `size`
  // other API calls are made: the index then doubles, up to 4 x capacity, past which the
  // older launch is forgotten.
  struct Slot {
    uint32_t id = 0;  // 0: empty (CUPTI's correlation ids start at 1)
    uint32_t seq = 0;  // low bits of the entry's sequence number (the ring is at most 2^32)
  };
  Entry& at(uint64_t seq) { return ring_[seq & (ring_.size() - 1)]; }
  Slot* find(uint32_t id);
  void insert(uint32_t id, uint64_t seq);
  void erase(uint32_t id);
  void release(Entry& e);  // its ids out of the index, its snapshot let go
  void grow();             // the ring, then the index
  void reindex(size_t slots);
  void advance_tail();

  const size_t capacity_;
  mutable std::mutex mu_;
  std::vector<Entry> ring_;  // power of two; live entries are [tail_, head_)
  std::vector<Slot> slots_;  // power of two, at least 4 x ring_.size()
  uint64_t head_ = 0, tail_ = 0;
  size_t live_ = 0;  // entries not taken
  uint64_t forgotten_ = 0;
};

}  // namespace edo::capture
