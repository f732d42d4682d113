// Space-saving top-K over a binary min-heap with a row -> heap position map.
#include <algorithm>

#include "internal.h"

namespace edo::stats::detail {

void SpaceSaving::reset(uint32_t k) {
  k_ = std::max<uint32_t>(1, k);
  items_.clear();
  pos_.reset(k_);
}

void SpaceSaving::clear() {
  items_.clear();
  pos_.clear();
}


uint64_t SpaceSaving::min_count() const {
  return items_.size() < k_ || items_.empty() ? 0 : items_[0].second;
}

void SpaceSaving::swap_nodes(size_t a, size_t b) {
  std::swap(items_[a], items_[b]);
  *pos_.find(items_[a].first) = static_cast<uint32_t>(a);
  *pos_.find(items_[b].first) = static_cast<uint32_t>(b);
}

void SpaceSaving::sift_down(size_t i) {
  const size_t n = items_.size();
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && items_[l].second < items_[m].second) m = l;
    if (r < n && items_[r].second < items_[m].second) m = r;
    if (m == i) return;
    swap_nodes(i, m);
    i = m;
  }
}

void SpaceSaving::sift_up(size_t i) {
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (items_[p].second <= items_[i].second) return;
    swap_nodes(i, p);
    i = p;
  }
}

void SpaceSaving::add(uint64_t row, uint64_t c) {
  if (uint32_t* p = pos_.find(row)) {
    items_[*p].second += c;
    sift_down(*p);
    return;
  }
  if (items_.size() < k_) {
    items_.emplace_back(row, c);
    pos_.set(row, static_cast<uint32_t>(items_.size() - 1));
    sift_up(items_.size() - 1);
    return;
  }
  // Replace the minimum: the newcomer inherits its count (its maximum possible count).
  pos_.erase(items_[0].first);
  items_[0].first = row;
  items_[0].second += c;
  pos_.set(row, 0);
  sift_down(0);
}

void SpaceSaving::offer(uint64_t row, uint64_t est) {
  if (uint32_t* p = pos_.find(row)) {
    items_[*p].second += 1;
    sift_down(*p);
    return;
  }
  if (items_.size() < k_) {
    items_.emplace_back(row, est);
    pos_.set(row, static_cast<uint32_t>(items_.size() - 1));
    sift_up(items_.size() - 1);
    return;
  }
  if (est <= items_[0].second) return;
  pos_.erase(items_[0].first);
  items_[0] = {row, est};
  pos_.set(row, 0);
  sift_down(0);
}

std::vector<std::pair<uint64_t, uint64_t>> SpaceSaving::sorted() const {
  auto v = items_;
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return v;
}

void SpaceSaving::assign(const std::vector<std::pair<uint64_t, uint64_t>>& items) {
  auto v = items;
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (v.size() > k_) v.resize(k_);
  items_.clear();
  pos_.reset(k_);
  // A descending array reversed is ascending, which is a valid min-heap.
  for (auto it = v.rbegin(); it != v.rend(); ++it) {
    if (pos_.contains(it->first)) continue;  // duplicate rows (corrupt input): keep one
    pos_.set(it->first, static_cast<uint32_t>(items_.size()));
    items_.push_back(*it);
  }
}

void SpaceSaving::merge(const SpaceSaving& o) {
  const uint64_t m1 = min_count(), m2 = o.min_count();
  std::unordered_map<uint64_t, uint64_t> sum;
  sum.reserve(items_.size() + o.items_.size());
  for (const auto& [r, c] : items_) sum[r] = c + (o.pos_.contains(r) ? 0 : m2);
  for (const auto& [r, c] : o.items_) {
    auto it = sum.find(r);
    if (it != sum.end())
      it->second += c;
    else
      sum[r] = c + m1;
  }
  std::vector<std::pair<uint64_t, uint64_t>> v(sum.begin(), sum.end());
  assign(v);
}

}  // namespace edo::stats::detail
