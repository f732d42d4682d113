// The offload LRU policy (edo/kernels/lru.h), on the host.
#include "edo/kernels/lru.h"

#include <algorithm>
#include <stdexcept>

#include "edo/kernels/formats/offload.h"

namespace edo::kernels {

LruCache::LruCache(std::uint64_t cache_rows) {
  ways_ = static_cast<std::uint32_t>(std::min<std::uint64_t>(kLruWays, cache_rows));
  sets_ = ways_ ? cache_rows / ways_ : 0;
  tag_.assign(cache_rows, -1);
  time_.assign(cache_rows, 0);
}

std::int64_t LruCache::find(std::int64_t row) const {
  return sets_ ? lru_find(tag_.data(), sets_, ways_, row) : -1;
}

std::uint64_t LruCache::batch(const std::int64_t* idx, std::int64_t n, std::vector<Fill>& fills) {
  ++now_;
  if (sets_ == 0) return 0;
  if (static_cast<std::uint64_t>(now_) == 0) throw std::overflow_error("offload cache: more than 2^32 batches");
  std::uint64_t hits = 0;
  miss_keys_.clear();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t r = idx[i];
    const std::int64_t s = find(r);
    if (s >= 0) {
      ++hits;
      time_[static_cast<std::size_t>(s)] = now_;
    } else {
      miss_keys_.push_back(lru_set_of(r, sets_) << 32 | static_cast<std::uint64_t>(r));
    }
  }
  std::sort(miss_keys_.begin(), miss_keys_.end());
  miss_keys_.erase(std::unique(miss_keys_.begin(), miss_keys_.end()), miss_keys_.end());
  std::uint32_t order[kLruWays];
  for (std::size_t i = 0; i < miss_keys_.size();) {
    const std::uint64_t set = miss_keys_[i] >> 32;
    const std::uint64_t base = set * ways_;
    // This set's slots not used by the batch, least recently used first.
    // (insertion by time; ways come in increasing order, so ties keep the lower way first)
    std::uint32_t free = 0;
    for (std::uint32_t w = 0; w < ways_; ++w) {
      if (time_[base + w] >= now_) continue;
      std::uint32_t at = free++;
      while (at > 0 && time_[base + order[at - 1]] > time_[base + w]) {
        order[at] = order[at - 1];
        --at;
      }
      order[at] = w;
    }
    std::uint32_t used = 0;
    for (; i < miss_keys_.size() && miss_keys_[i] >> 32 == set; ++i) {
      if (used == free) continue;  // no slot left in this set: read from host this batch
      const std::uint64_t slot = base + order[used++];
      const auto row = static_cast<std::int64_t>(miss_keys_[i] & 0xffffffffu);
      fills.push_back({row, static_cast<std::int32_t>(slot), tag_[slot]});
      tag_[slot] = row;
      time_[slot] = now_;
    }
  }
  return hits;
}

}  // namespace edo::kernels
