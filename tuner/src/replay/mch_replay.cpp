#include "mch_replay.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace edo::tuner {
namespace {

constexpr int64_t kEmpty = std::numeric_limits<int64_t>::max();

// One slot of the table: its raw id (kEmpty: none), the row it reads (its embedding index) and
// the policy's metadata. Kept sorted by raw id, as the module keeps its buffers.
struct Slot {
  int64_t raw = kEmpty;
  int64_t row = 0;
  int64_t count = 0;
  int64_t last = 0;
  int64_t since = 0;  // the iteration it was given its id (0: as initialised)
};

// Scores in the module's arithmetic: float32 for the distance-weighted policies.
struct Score {
  bool integral = false;
  int64_t i = 0;
  float f = 0;
  bool operator>(const Score& o) const { return integral ? i > o.i : f > o.f; }
};

Score score_of(MchPolicy p, int64_t count, int64_t last, int64_t now, double decay) {
  Score s;
  if (p == MchPolicy::kLfu) {
    s.integral = true;
    s.i = count;
    return s;
  }
  // torch.pow(int64 tensor, python float) is float32; torch.div(int64, float32) is float32.
  const float distance = std::pow(static_cast<float>(now - last + 1), static_cast<float>(decay));
  s.f = p == MchPolicy::kLru ? -distance : static_cast<float>(count) / distance;
  return s;
}

// torch.searchsorted(sorted[:-1], v) (left), then sorted[i] == v.
size_t search(const std::vector<Slot>& slots, int64_t v, bool& found) {
  const auto end = slots.end() - 1;
  const auto it = std::lower_bound(slots.begin(), end, v, [](const Slot& s, int64_t x) { return s.raw < x; });
  const size_t i = size_t(it - slots.begin());
  found = slots[i].raw == v;
  return i;
}

class MchTable {
 public:
  explicit MchTable(const MchConfig& c) : c_(c), slots_(c.slots) {
    for (size_t i = 0; i < slots_.size(); ++i) slots_[i].row = int64_t(i);
  }

  void step(const std::vector<int64_t>& ids, bool scored, MchStats& st) {
    // profile(): iterations count from 1 (the module's _current_iter_tensor starts at 0).
    ++now_;
    if (buffer_size_ < 0) buffer_size_ = int64_t(double(ids.size()) * double(c_.eviction_interval) * 1.25);
    const size_t free_entries = size_t(std::max<int64_t>(0, buffer_size_ - int64_t(history_.size())));
    const size_t kept = std::min(free_entries, ids.size());
    history_.insert(history_.end(), ids.begin(), ids.begin() + std::ptrdiff_t(kept));
    history_iter_.insert(history_iter_.end(), kept, now_);
    if (now_ - last_eviction_ == int64_t(c_.eviction_interval)) {
      coalesce(scored, st);
      last_eviction_ = now_;
    }
    // remap()
    if (!scored) return;
    ++st.steps;
    const int64_t miss_row = int64_t(c_.slots) - 1;
    for (int64_t v : ids) {
      bool found = false;
      const size_t i = search(slots_, v, found);
      ++st.lookups;
      if (found) ++st.hits;
      if (!found || slots_[i].row == miss_row) ++st.miss_row_reads;
      else if (slots_[i].since == now_) ++st.fresh_reads;
    }
  }

 private:
  void coalesce(bool scored, MchStats& st) {
    // torch.unique: ascending ids, their counts and (the policy's coalesce) the last iteration.
    std::vector<size_t> order(history_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return history_[a] < history_[b]; });
    std::vector<int64_t> uniq, counts, lasts;
    for (size_t k : order) {
      if (uniq.empty() || uniq.back() != history_[k]) {
        uniq.push_back(history_[k]);
        counts.push_back(0);
        lasts.push_back(std::numeric_limits<int64_t>::min());
      }
      ++counts.back();
      lasts.back() = std::max(lasts.back(), history_iter_[k]);
    }
    history_.clear();
    history_iter_.clear();
    // _update_and_evict: by count, descending, stable.
    std::vector<size_t> by_count(uniq.size());
    std::iota(by_count.begin(), by_count.end(), size_t{0});
    std::stable_sort(by_count.begin(), by_count.end(), [&](size_t a, size_t b) { return counts[a] > counts[b]; });
    std::vector<int64_t> new_ids, new_counts, new_lasts;
    for (size_t k : by_count) {
      bool found = false;
      const size_t i = search(slots_, uniq[k], found);
      if (found) {
        // The policy's update of a matching slot (LFU adds the counts; LRU takes the last
        // access; DistanceLFU both). Unused metadata is kept but never scored.
        slots_[i].count += counts[k];
        slots_[i].last = lasts[k];
      } else {
        new_ids.push_back(uniq[k]);
        new_counts.push_back(counts[k]);
        new_lasts.push_back(lasts[k]);
      }
    }
    const size_t n = slots_.size();
    slots_[n - 1].count = kEmpty;  // "avoid last element of zch": never evicted
    slots_[n - 1].last = now_;
    std::vector<Score> scores;
    scores.reserve(n + new_ids.size());
    for (const Slot& s : slots_) scores.push_back(score_of(c_.policy, s.count, s.last, now_, c_.decay_exponent));
    for (size_t j = 0; j < new_ids.size(); ++j)
      scores.push_back(score_of(c_.policy, new_counts[j], new_lasts[j], now_, c_.decay_exponent));
    std::vector<size_t> ranked(scores.size());
    std::iota(ranked.begin(), ranked.end(), size_t{0});
    std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    std::vector<size_t> evicted, selected;
    for (size_t r = 0; r < ranked.size(); ++r) {
      if (r < n && ranked[r] >= n) selected.push_back(ranked[r] - n);
      if (r >= n && ranked[r] < n) evicted.push_back(ranked[r]);
    }
    ++st.evictions_runs;
    for (size_t k = 0; k < evicted.size() && k < selected.size(); ++k) {
      Slot& s = slots_[evicted[k]];
      if (scored) {
        ++st.inserts;
        if (s.raw != kEmpty) ++st.evictions;
      }
      s.raw = new_ids[selected[k]];
      s.count = new_counts[selected[k]];
      s.last = new_lasts[selected[k]];
      s.since = now_;
    }
    // _sort_mch_buffers: stable by raw id, rows and metadata carried along.
    std::stable_sort(slots_.begin(), slots_.end(), [](const Slot& a, const Slot& b) { return a.raw < b.raw; });
  }

  const MchConfig c_;
  std::vector<Slot> slots_;
  int64_t now_ = 0;
  int64_t last_eviction_ = 0;
  int64_t buffer_size_ = -1;
  std::vector<int64_t> history_, history_iter_;
};

}  // namespace

const char* mch_policy_name(MchPolicy p) {
  switch (p) {
    case MchPolicy::kDistanceLfu: return "distance_lfu";
    case MchPolicy::kLfu: return "lfu";
    case MchPolicy::kLru: return "lru";
  }
  return "distance_lfu";
}

MchPolicy mch_policy_from_name(const std::string& name) {
  for (MchPolicy p : {MchPolicy::kDistanceLfu, MchPolicy::kLfu, MchPolicy::kLru})
    if (name == mch_policy_name(p)) return p;
  throw std::invalid_argument("unknown managed-collision eviction policy '" + name + "' (distance_lfu, lfu or lru)");
}

MchStats replay_mch(const std::vector<std::vector<int64_t>>& steps, const MchConfig& c, size_t score_from) {
  if (c.slots < 2) throw std::invalid_argument("a managed-collision table needs at least 2 slots (one is the miss row)");
  if (c.eviction_interval == 0) throw std::invalid_argument("the eviction interval must be at least 1 step");
  for (const auto& s : steps)
    for (int64_t v : s)
      if (v == kEmpty) throw std::invalid_argument("id 2^63-1 is the managed-collision module's empty-slot marker");
  MchTable table(c);
  MchStats st;
  for (size_t k = 0; k < steps.size(); ++k) table.step(steps[k], k >= score_from, st);
  return st;
}

}  // namespace edo::tuner
