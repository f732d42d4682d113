#include "ssd_replay.h"

#include <list>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace edo::tuner {
namespace {

// A fully associative LRU of `slots` rows: constant time per reference.
class Lru {
 public:
  explicit Lru(uint64_t slots) : slots_(slots) {}
  // Moves `row` to the most recent place when held; false when not held.
  bool touch(uint64_t row) {
    auto it = where_.find(row);
    if (it == where_.end()) return false;
    order_.splice(order_.begin(), order_, it->second);
    return true;
  }
  // Holds `row` as the most recent (it must not be held); returns the row it displaced.
  std::optional<uint64_t> insert(uint64_t row) {
    if (slots_ == 0) return row;  // no level: everything passes through
    std::optional<uint64_t> out;
    if (order_.size() == slots_) {
      out = order_.back();
      where_.erase(order_.back());
      order_.pop_back();
    }
    order_.push_front(row);
    where_[row] = order_.begin();
    return out;
  }
  // A write into the level: held rows become the most recent, others are inserted (returns
  // the row that displaced, if any).
  std::optional<uint64_t> put(uint64_t row) {
    if (touch(row)) return std::nullopt;
    return insert(row);
  }

 private:
  uint64_t slots_;
  std::list<uint64_t> order_;  // most recent first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where_;
};

}  // namespace

TwoLevelCount replay_two_level(const ReplayStream& s, uint64_t device_slots, uint64_t host_slots) {
  Lru l1(device_slots), l2(host_slots);
  std::unordered_set<uint64_t> dirty;  // rows L2 holds that were written back into it
  TwoLevelCount n;
  for (size_t i = 0; i < s.rows.size(); ++i) {
    const uint64_t row = s.rows[i];
    const bool counted = i >= s.split;
    n.refs += counted;
    if (device_slots > 0 && l1.touch(row)) {
      n.device_hits += counted;
      continue;
    }
    // The L1 miss is read from L2 (get), or from the SSD and then put into L2.
    if (host_slots > 0 && l2.touch(row)) n.host_hits += counted;
    else {
      n.ssd_reads += counted;
      if (host_slots > 0)
        if (const auto out = l2.insert(row); out && dirty.erase(*out)) n.ssd_writes += counted;
    }
    if (device_slots == 0) continue;
    // The row takes an L1 slot; the row it displaces is written back through L2 (set).
    if (const auto evicted = l1.insert(row)) {
      n.writebacks += counted;
      if (host_slots == 0) {
        n.ssd_writes += counted;
        continue;
      }
      if (const auto out = l2.put(*evicted); out && dirty.erase(*out)) n.ssd_writes += counted;
      dirty.insert(*evicted);
    }
  }
  return n;
}

}  // namespace edo::tuner
