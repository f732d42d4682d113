// Stack-distance histogram (log-linear bins) and the exact Mattson stack (bitmap of live
// timestamps with block counts, periodic compaction).
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

void DistanceTally::add_to(StackDistanceHistogram& h) {
  if (cold) h.add_cold(static_cast<double>(cold));
  if (hits) {
    for (size_t b = 0; b < bins.size(); ++b)
      if (bins[b]) {
        // bin_lower(b) lies in bin b and below the largest distance tallied, which goes last
        h.add(StackDistanceHistogram::bin_lower(static_cast<uint32_t>(b)), static_cast<double>(bins[b]));
        bins[b] = 0;
      }
    h.add(max_distance, 0.0);  // the exact largest distance (adds nothing to its bin)
  }
  cold = hits = max_distance = 0;
}

namespace {

constexpr uint32_t kBlockShift = 9, kSuperShift = 15;  // as MattsonStack's
constexpr uint64_t kWordsPerBlock = uint64_t{1} << (kBlockShift - 6);
constexpr uint64_t kBlocksPerSuper = uint64_t{1} << (kSuperShift - kBlockShift);
// Gaps spanning fewer words than this take the short count (bits_ has this many spare words
// at its end, so it never reads past it).
constexpr uint64_t kShortWords = 16;

// The stack's arrays as the loop sees them.
struct StackView {
  uint32_t* last;
  uint32_t* owner;
  uint64_t* bits;
  uint32_t* block;
  uint32_t* super;
  uint64_t supers;  // super counts to sum (a multiple of 8; those after now's are zero)
  uint64_t now, live;
};

// Live markers after timestamp prev (all of them are before now: none is set at or after
// now). kPop: the popcnt instruction is there.
template <bool kPop>
__attribute__((always_inline)) inline uint64_t live_after(const StackView& s, uint64_t prev, uint64_t now) {
  auto pc = [](uint64_t x) -> uint64_t { return kPop ? static_cast<uint64_t>(__builtin_popcountll(x)) : popcount_swar(x); };
  const uint64_t* bits = s.bits;
  const uint64_t w = prev >> 6;
  const uint64_t above = ~uint64_t{1} << (prev & 63);  // bits after prev in its word
  uint64_t n = pc(bits[w] & above);
  if ((now >> 6) - w < kShortWords) {
    // words after w up to now's word: the ones after it are zero
    for (uint64_t k = 1; k < kShortWords; ++k) n += pc(bits[w + k]);
    return n;
  }
  // the rest of prev's block, word by word
  const uint64_t wb = w & ~(kWordsPerBlock - 1), wk = w & (kWordsPerBlock - 1);
  for (uint64_t k = 0; k < kWordsPerBlock; ++k) n += k > wk ? pc(bits[wb + k]) : 0;
  // the rest of prev's super block, block by block (a fixed 64 counts under a mask)
  const uint64_t b = prev >> kBlockShift;
  const uint64_t bb = b & ~(kBlocksPerSuper - 1), bk = b & (kBlocksPerSuper - 1);
  uint32_t m = 0;
  for (uint32_t k = 0; k < kBlocksPerSuper; ++k) m += k > bk ? s.block[bb + k] : 0u;
  n += m;
  // the super blocks after it: all of them summed under a mask too (their number only changes
  // at a compaction, so the loop's exit is predicted)
  const uint64_t sp = prev >> kSuperShift;
  uint64_t m2 = 0;
  for (uint64_t k = 0; k < s.supers; ++k) m2 += k > sp ? s.super[k] : 0u;
  return n + m2;
}

// References one id (below the size of `last`, with room left in the capacity): returns its
// distance, kCold for a first reference.
template <bool kPop>
__attribute__((always_inline)) inline uint64_t one_reference(StackView& s, uint64_t id) {
  const uint64_t t = s.now;
  const uint32_t p = s.last[id];
  uint64_t d = MattsonStack::kCold;
  if (p != 0) {
    const uint64_t prev = p - 1;
    d = live_after<kPop>(s, prev, t);
    // The marker moves from prev to t (counters they share are left alone).
    s.bits[prev >> 6] &= ~(uint64_t{1} << (prev & 63));
    if ((prev >> kBlockShift) != (t >> kBlockShift)) {
      --s.block[prev >> kBlockShift];
      ++s.block[t >> kBlockShift];
      if ((prev >> kSuperShift) != (t >> kSuperShift)) {
        --s.super[prev >> kSuperShift];
        ++s.super[t >> kSuperShift];
      }
    }
  } else {
    ++s.live;
    ++s.block[t >> kBlockShift];
    ++s.super[t >> kSuperShift];
  }
  s.bits[t >> 6] |= uint64_t{1} << (t & 63);
  s.owner[t] = static_cast<uint32_t>(id + 1);
  s.last[id] = static_cast<uint32_t>(t + 1);
  s.now = t + 1;
  return d;
}

// compiled twice: with popcnt and AVX2 (the masked sums become vector adds), and for the
// library's baseline target; chosen once at load
__attribute__((target("popcnt,avx2"))) uint64_t run_one_fast(StackView& s, uint64_t id) { return one_reference<true>(s, id); }
uint64_t run_one_base(StackView& s, uint64_t id) { return one_reference<false>(s, id); }
const bool kHaveFast = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("avx2");
}();
bool g_baseline_only = false;  // tests: the baseline loops on a machine that has the fast ones

}  // namespace

bool stack_fast_loops() { return kHaveFast && !g_baseline_only; }
void MattsonStack::use_baseline_loop_for_test(bool on) { g_baseline_only = on; }

void MattsonStack::grow_ids(uint64_t max_id) {
  if (max_id < last_.size()) return;
  const uint64_t want = std::max<uint64_t>(max_id + 1, std::min<uint64_t>(last_.size() * 2, id_bound_));
  last_.resize(want, 0);
}

uint64_t MattsonStack::reference(uint64_t id) {
  grow_ids(id);
  if (now_ == cap_) compact();
  StackView v{last_.data(), owner_.data(), bits_.data(), block_.data(), super_.data(), super_.size(), now_, live_};
  const uint64_t d = stack_fast_loops() ? run_one_fast(v, id) : run_one_base(v, id);
  now_ = v.now;
  live_ = v.live;
  return d;
}

void MattsonStack::compact() {
  // In place (a live marker's new timestamp is never after its old one): the live markers'
  // owners move to the front, oldest first, and their ids' last timestamps follow.
  uint64_t k = 0;
  const uint64_t words = (now_ + 63) / 64;
  for (uint64_t w = 0; w < words; ++w) {
    for (uint64_t x = bits_[w]; x; x &= x - 1) {
      const uint32_t o = owner_[w * 64 + static_cast<uint64_t>(__builtin_ctzll(x))];
      owner_[k] = o;
      last_[o - 1] = static_cast<uint32_t>(k + 1);
      ++k;
    }
  }
  // capacity: four times the live ids (at least 4096), rounded up to whole 64-bit words of
  // markers. Compaction writes every live id's last timestamp, scattered over the id array
  // (cache misses on a large table); at 4x it comes every 3x live references instead of
  // every 1x. The owner array is 16 bytes per live id, within state_bound.cpp's 24.
  const uint64_t ncap = std::max<uint64_t>(4096, 4 * (live_ + 1) + 63) / 64 * 64;
  if (owner_.size() < ncap) owner_.resize(ncap, 0);
  cap_ = ncap;
  now_ = k;
  // timestamps [0, k) are live, the rest free
  bits_.assign(ncap / 64 + 1 + kShortWords, 0);  // live_after() may read past the end
  std::fill(bits_.begin(), bits_.begin() + static_cast<ptrdiff_t>(k / 64), ~uint64_t{0});
  if (k & 63) bits_[k / 64] = (uint64_t{1} << (k & 63)) - 1;
  // whole super blocks of block counts: live_after() sums all 64 of the last one
  block_.assign(((ncap >> kSuperShift) + 1) << (kSuperShift - kBlockShift), 0);
  std::fill(block_.begin(), block_.begin() + static_cast<ptrdiff_t>(k >> kBlockShift), uint32_t{1} << kBlockShift);
  block_[k >> kBlockShift] += static_cast<uint32_t>(k & ((uint64_t{1} << kBlockShift) - 1));
  super_.assign(((ncap >> kSuperShift) + 8) / 8 * 8, 0);  // whole vectors of 8 (see live_after())
  qbits_.assign(bits_.size(), 0);  // the batched loop's flags (stack_chunk.cpp), clear between chunks
  qblock_.assign(block_.size(), 0);
  std::fill(super_.begin(), super_.begin() + static_cast<ptrdiff_t>(k >> kSuperShift), uint32_t{1} << kSuperShift);
  super_[k >> kSuperShift] += static_cast<uint32_t>(k & ((uint64_t{1} << kSuperShift) - 1));
}

}  // namespace edo::stats::detail
