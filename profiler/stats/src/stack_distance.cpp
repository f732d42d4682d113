// Stack-distance histogram (log-linear bins) and the exact Mattson stack (Fenwick tree over
// timestamps with periodic compaction).
#include <algorithm>
#include <cmath>

#include "internal.h"

namespace edo::stats {

uint64_t StackDistanceHistogram::bin_lower(uint32_t bin) {
  if (bin < kExactBelow) return bin;
  const uint32_t o = 8 + (bin - kExactBelow) / kSubBinsPerOctave;
  const uint64_t sub = (bin - kExactBelow) % kSubBinsPerOctave;
  if (o >= 64) return UINT64_MAX;
  return (kSubBinsPerOctave + sub) << (o - 7);
}

uint64_t StackDistanceHistogram::bin_upper(uint32_t bin) {
  if (bin < kExactBelow) return uint64_t{bin} + 1;
  const uint32_t o = 8 + (bin - kExactBelow) / kSubBinsPerOctave;
  if (o >= 64) return UINT64_MAX;
  const uint64_t lo = bin_lower(bin);
  const uint64_t w = uint64_t{1} << (o - 7);
  return lo > UINT64_MAX - w ? UINT64_MAX : lo + w;
}

void StackDistanceHistogram::add(uint64_t distance, double weight) {
  const uint32_t b = bin_of(distance);
  if (b >= bins_.size()) bins_.resize(b + 1, 0.0);
  bins_[b] += weight;
  max_distance_ = std::max(max_distance_, distance);
}

void StackDistanceHistogram::add_cold(double weight) { cold_ += weight; }

void StackDistanceHistogram::merge(const StackDistanceHistogram& o) {
  if (o.bins_.size() > bins_.size()) bins_.resize(o.bins_.size(), 0.0);
  for (size_t i = 0; i < o.bins_.size(); ++i) bins_[i] += o.bins_[i];
  cold_ += o.cold_;
  max_distance_ = std::max(max_distance_, o.max_distance_);
}

void StackDistanceHistogram::set(std::vector<double> bins, double cold, uint64_t max_distance) {
  bins_ = std::move(bins);
  cold_ = cold;
  if (max_distance == UINT64_MAX) {
    max_distance = 0;
    for (size_t i = bins_.size(); i-- > 0;)
      if (bins_[i] != 0.0) {
        max_distance = bin_upper(static_cast<uint32_t>(i)) - 1;
        break;
      }
  }
  max_distance_ = max_distance;
}

double StackDistanceHistogram::hits_below(double cache_rows) const {
  double h = 0.0;
  for (size_t i = 0; i < bins_.size(); ++i) {
    if (bins_[i] == 0.0) continue;
    const double lo = static_cast<double>(bin_lower(static_cast<uint32_t>(i)));
    uint64_t up = bin_upper(static_cast<uint32_t>(i));
    if (max_distance_ >= bin_lower(static_cast<uint32_t>(i)) && max_distance_ < up)
      up = max_distance_ + 1;
    const double hi = static_cast<double>(up);
    if (cache_rows >= hi) {
      h += bins_[i];
    } else if (cache_rows > lo) {
      h += bins_[i] * (cache_rows - lo) / (hi - lo);
    } else {
      break;
    }
  }
  return h;
}

double StackDistanceHistogram::total() const {
  double t = cold_;
  for (double b : bins_) t += b;
  return t;
}

}  // namespace edo::stats

namespace edo::stats::detail {

uint64_t MattsonStack::reference(uint64_t id) {
  if (id >= last_.size()) last_.resize(std::max<uint64_t>(id + 1, last_.size() * 2), 0);
  if (now_ == cap_) compact();
  const uint32_t p = last_[id];
  uint64_t d = kCold;
  int32_t* t = tree_.data();
  if (p != 0) {
    const uint64_t pos = p;  // 1-based Fenwick index of the previous reference
    uint64_t prefix = 0;
    for (uint64_t i = pos; i > 0; i &= i - 1) prefix += static_cast<uint64_t>(t[i]);
    d = live_ - prefix;
    for (uint64_t i = pos; i <= cap_; i += i & (~i + 1)) --t[i];
    owner_[pos - 1] = 0;
    --live_;
  }
  for (uint64_t i = now_ + 1; i <= cap_; i += i & (~i + 1)) ++t[i];
  owner_[now_] = static_cast<uint32_t>(id + 1);
  last_[id] = static_cast<uint32_t>(now_ + 1);
  ++live_;
  ++now_;
  return d;
}

void MattsonStack::compact() {
  uint64_t ncap = std::max<uint64_t>(1024, 2 * (live_ + 1));
  std::vector<uint32_t> nowner(ncap, 0);
  uint64_t k = 0;
  for (uint64_t ts = 0; ts < now_; ++ts) {
    const uint32_t o = owner_[ts];
    if (!o) continue;
    nowner[k] = o;
    last_[o - 1] = static_cast<uint32_t>(k + 1);
    ++k;
  }
  owner_ = std::move(nowner);
  cap_ = ncap;
  now_ = k;
  tree_.assign(cap_ + 1, 0);
  for (uint64_t i = 1; i <= k; ++i) tree_[i] = 1;
  for (uint64_t i = 1; i <= cap_; ++i) {
    const uint64_t j = i + (i & (~i + 1));
    if (j <= cap_) tree_[j] += tree_[i];
  }
}

}  // namespace edo::stats::detail
