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

namespace {
inline uint64_t popcount64(uint64_t x) {
#if defined(__POPCNT__)
  return static_cast<uint64_t>(__builtin_popcountll(x));
#else
  // SWAR: the library is built for baseline x86-64, which has no popcnt instruction.
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return (x * 0x0101010101010101ull) >> 56;
#endif
}

// Live markers in words w .. w+kShortWords-1 of `bits`, masked: the first by lo_mask, word
// w+last by hi_mask, the ones after it not at all. No branches: on skewed traces most gaps
// are this short, and the loops of the general case cost a mispredicted exit each. One body, two
// functions: with the popcnt instruction (nearly every x86-64 CPU) and without (the
// library's baseline target), chosen once at load.
constexpr uint64_t kShortWords = 16;
#define EDO_SHORT_COUNT_BODY(POPCOUNT)                                          \
  uint64_t n = 0;                                                               \
  for (uint64_t k = 0; k < kShortWords; ++k) {                                  \
    uint64_t m = k < last ? ~uint64_t{0} : (k == last ? hi_mask : uint64_t{0}); \
    if (k == 0) m &= lo_mask;                                                   \
    n += POPCOUNT(bits[k] & m);                                                 \
  }                                                                             \
  return n;
__attribute__((target("popcnt"))) uint64_t short_count_popcnt(const uint64_t* bits, uint64_t last, uint64_t lo_mask,
                                                               uint64_t hi_mask) {
  EDO_SHORT_COUNT_BODY(__builtin_popcountll)
}
uint64_t short_count_swar(const uint64_t* bits, uint64_t last, uint64_t lo_mask, uint64_t hi_mask) {
  EDO_SHORT_COUNT_BODY(popcount64)
}
#undef EDO_SHORT_COUNT_BODY
const bool kHavePopcnt = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("popcnt") != 0;
}();
}  // namespace

void MattsonStack::set_live(uint64_t ts) {
  bits_[ts >> 6] |= uint64_t{1} << (ts & 63);
  ++block_[ts >> kBlockShift];
  ++super_[ts >> kSuperShift];
}

uint64_t MattsonStack::live_between(uint64_t lo, uint64_t hi) const {
  if (lo >= hi) return 0;
  const uint64_t* bits = bits_.data();
  uint64_t w = lo >> 6;
  const uint64_t hw = hi >> 6;
  const uint64_t lo_mask = ~uint64_t{0} << (lo & 63);
  const uint64_t hi_mask = (uint64_t{1} << (hi & 63)) - 1;  // bits below hi in word hw
  if (hw - w < kShortWords)  // bits_ has kShortWords spare words at the end
    return kHavePopcnt ? short_count_popcnt(bits + w, hw - w, lo_mask, hi_mask)
                       : short_count_swar(bits + w, hw - w, lo_mask, hi_mask);
  uint64_t n = popcount64(bits[w] & lo_mask);
  ++w;
  // whole words [w, hw): words up to a block boundary, blocks up to a super boundary,
  // supers, then blocks and words again
  constexpr uint64_t kWordsPerBlock = uint64_t{1} << (kBlockShift - 6);
  constexpr uint64_t kBlocksPerSuper = uint64_t{1} << (kSuperShift - kBlockShift);
  while (w < hw && (w & (kWordsPerBlock - 1))) n += popcount64(bits[w++]);
  uint64_t b = w / kWordsPerBlock;
  const uint64_t hb = hw / kWordsPerBlock;
  if (b < hb) {
    while (b < hb && (b & (kBlocksPerSuper - 1))) n += block_[b++];
    uint64_t s = b / kBlocksPerSuper;
    const uint64_t hs = hb / kBlocksPerSuper;
    if (s < hs) {
      while (s < hs) n += super_[s++];
      b = hs * kBlocksPerSuper;
    }
    while (b < hb) n += block_[b++];
    w = hb * kWordsPerBlock;
  }
  while (w < hw) n += popcount64(bits[w++]);
  if (hi & 63) n += popcount64(bits[hw] & hi_mask);
  return n;
}

uint64_t MattsonStack::reference(uint64_t id) {
  if (id >= last_.size()) last_.resize(std::max<uint64_t>(id + 1, last_.size() * 2), 0);
  if (now_ == cap_) compact();
  const uint32_t p = last_[id];
  uint64_t d = kCold;
  const uint64_t t = now_;
  if (p != 0) {
    const uint64_t prev = p - 1;  // timestamp of the previous reference
    d = live_between(prev + 1, t);
    // The marker moves from prev to t. Counters they share are left alone: a decrement and
    // an increment of one counter back to back (most moves on a skewed trace stay in one
    // block) made the CPU replay the loads it had run ahead of the first store.
    bits_[prev >> 6] &= ~(uint64_t{1} << (prev & 63));
    if ((prev >> kBlockShift) != (t >> kBlockShift)) {
      --block_[prev >> kBlockShift];
      ++block_[t >> kBlockShift];
      if ((prev >> kSuperShift) != (t >> kSuperShift)) {
        --super_[prev >> kSuperShift];
        ++super_[t >> kSuperShift];
      }
    }
    bits_[t >> 6] |= uint64_t{1} << (t & 63);
    owner_[prev] = 0;
  } else {
    set_live(t);
    ++live_;
  }
  owner_[t] = static_cast<uint32_t>(id + 1);
  last_[id] = static_cast<uint32_t>(t + 1);
  now_ = t + 1;
  return d;
}

void MattsonStack::compact() {
  // capacity: twice the live ids, rounded up to whole 64-bit words of markers
  const uint64_t ncap = std::max<uint64_t>(1024, 2 * (live_ + 1) + 63) / 64 * 64;
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
  bits_.assign(ncap / 64 + 1 + kShortWords, 0);  // live_between() may read past the end
  block_.assign((ncap >> kBlockShift) + 1, 0);
  super_.assign((ncap >> kSuperShift) + 1, 0);
  for (uint64_t ts = 0; ts < k; ++ts) set_live(ts);
}

}  // namespace edo::stats::detail
