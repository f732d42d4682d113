#include "edo/model/first_seen.h"

#include <cmath>
#include <algorithm>
#include <cstdlib>

namespace edo::model {

HeldOut held_out_split(const FirstSeenCurve& curve, uint64_t total, double fraction) {
  HeldOut h;
  if (curve.size() < 2 || total == 0) return h;
  const double target = fraction * static_cast<double>(total);
  size_t cut = 0;  // the first held-out segment
  for (size_t k = 1; k < curve.size(); ++k) {
    if (curve[k].position == 0 || curve[k].position >= total) continue;
    if (cut == 0 || std::fabs(static_cast<double>(curve[k].position) - target) <
                        std::fabs(static_cast<double>(curve[cut].position) - target))
      cut = k;
  }
  if (cut == 0) return h;
  h.valid = true;
  h.fit_lookups = curve[cut].position;
  h.held_out_lookups = total - h.fit_lookups;
  for (size_t k = cut; k < curve.size(); ++k) {
    h.lost += curve[k].lookups;
    h.rows_first_read_after += curve[k].new_rows;
  }
  return h;
}

void FirstSeenTracker::add(const stats::TableAggregate& before, const stats::TableAggregate& delta) {
  if (unknown_) return;
  if (delta.mode() != stats::CountMode::kExact || (!before.empty() && before.mode() != stats::CountMode::kExact)) {
    unknown_ = true;
    return;
  }
  if (delta.lookups() == 0) return;
  const auto segment = static_cast<uint32_t>(positions_.size());
  positions_.push_back(lookups_);
  delta.for_each_nonzero([&](uint64_t row, uint64_t) {
    if (before.count(row) == 0) first_.emplace(row, segment);
  });
  lookups_ += delta.lookups();  // in-range lookups only
}

void FirstSeenTracker::begin_segment() { positions_.push_back(lookups_); }

void FirstSeenTracker::add_indices(const int64_t* idx, size_t n, uint64_t rows) {
  if (positions_.empty()) begin_segment();
  if (dense_.size() != rows) dense_.assign(rows, 0);
  const auto segment = static_cast<uint32_t>(positions_.size());  // + 1
  for (size_t i = 0; i < n; ++i) {
    if (idx[i] < 0 || static_cast<uint64_t>(idx[i]) >= rows) continue;
    ++lookups_;
    uint32_t& f = dense_[static_cast<size_t>(idx[i])];
    if (f == 0) f = segment;
  }
}

FirstSeenCurve FirstSeenTracker::finish(const stats::TableAggregate& total, size_t max_segments) const {
  if (unknown_ || positions_.empty() || total.mode() != stats::CountMode::kExact) return {};
  FirstSeenCurve curve(positions_.size());
  for (size_t k = 0; k < positions_.size(); ++k) curve[k].position = positions_[k];
  total.for_each_nonzero([&](uint64_t row, uint64_t count) {
    size_t segment = 0;
    if (row < dense_.size() && dense_[row] > 0) {
      segment = dense_[row] - 1;
    } else if (auto it = first_.find(row); it != first_.end()) {
      segment = it->second;
    }
    FirstSeenSegment& s = curve[std::min(segment, curve.size() - 1)];
    ++s.new_rows;
    s.lookups += count;
  });
  if (max_segments < 2 || curve.size() <= max_segments) return curve;
  // Merge adjacent segments: boundaries kept at every step-th.
  const size_t step = (curve.size() + max_segments - 1) / max_segments;
  FirstSeenCurve out;
  for (size_t k = 0; k < curve.size(); ++k) {
    if (k % step == 0) out.push_back({curve[k].position, 0, 0});
    out.back().new_rows += curve[k].new_rows;
    out.back().lookups += curve[k].lookups;
  }
  return out;
}

}  // namespace edo::model
