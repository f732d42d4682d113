// SHARDS fixed-rate spatial sampling in front of the Mattson stack, with post-stratified
// weights and exact reuse times for hot rows (see internal.h and docs/stats.md).
#include <algorithm>
#include <cmath>

#include "internal.h"

namespace edo::stats::detail {

namespace {
constexpr uint64_t kMapSalt = 0x2545f4914f6cdd1dULL;
// The sampling hash (row_hash.h), computed for every in-range reference: one multiply instead
// of mix64's two; bits 40..51 (the hot slot) spread any 2^28 consecutive rows evenly.
using hash::sample_hash;
static_assert(hash::kSampleModBits == ShardsSampler::kModBits);
}  // namespace

ShardsSampler::ShardsSampler(double rate, uint64_t rows, bool stratify) : rows_(rows), stratify_(stratify) {
  if (stratify_) counts_.assign(std::min(rows, kCountSlots), 0);
  class_refs_.assign(kClasses, 0);
  rate = std::clamp(rate, 1.0 / (1u << kModBits), 1.0);
  threshold_ = static_cast<uint64_t>(std::llround(rate * (1u << kModBits)));
  if (threshold_ == 0) threshold_ = 1;
  rate_ = static_cast<double>(threshold_) / (1u << kModBits);
  keys_.assign(1024, 0);
  ids_.assign(1024, 0);
  cls_.resize(kClasses);
  samples_.assign(kClasses, 0.0);
  hot_refs_.assign(kClasses, 0);
  hot_.assign(kHotSlots, HotSlot{});
  hot_stack_t_.assign(kHotSlots, 0);
  hot_reuse_.assign((kReuseCopies - 1) * StackDistanceHistogram::kExactBelow + StackDistanceHistogram::bin_of(UINT64_MAX) + 1, 0);
  ring_.assign(kWindow, 0);
}

Footprint::Footprint() : sum_(kWindow + 1, 0.0), seen_(4 * kWindow, 0), seen_gen_(4 * kWindow, 0) {}

double Footprint::at(double w) const {
  if (w <= 0.0) return 0.0;
  if (n_ == 0.0) return w;  // no window measured yet: the upper bound
  auto mean = [&](uint32_t i) { return sum_[i] / n_; };
  if (w <= kWindow) {
    const uint32_t lo = static_cast<uint32_t>(w);
    const double f = w - lo;
    const double a = lo ? mean(lo) : 0.0;
    return lo < kWindow ? a + f * (mean(lo + 1) - a) : a;
  }
  const double slope = std::max(0.0, (mean(kWindow) - mean(kWindow / 2)) / (kWindow / 2));
  return mean(kWindow) + (w - kWindow) * slope;
}

void put_distance(std::vector<double>& bins, uint64_t& maxd, double dist, double w) {
  const double fl = std::floor(dist);
  const double fr = dist - fl;
  for (int j = 0; j < 2; ++j) {
    const double x = j ? w * fr : w * (1.0 - fr);
    if (x == 0.0) continue;
    const uint64_t d = static_cast<uint64_t>(fl) + static_cast<uint64_t>(j);
    const uint32_t b = StackDistanceHistogram::bin_of(d);
    if (b >= bins.size()) bins.resize(b + 1, 0.0);
    bins[b] += x;
    maxd = std::max(maxd, d);
  }
}

void add_stratified(std::vector<double>& bins, double& cold, uint64_t& maxd, const std::vector<StackDistanceHistogram>& cls,
                    const std::vector<double>& samples, const std::vector<double>& total) {
  const size_t kc = cls.size();
  bool any = false;
  for (size_t k = 0; k < kc; ++k) any |= samples[k] > 0.0;
  if (!any) {
    double rest = 0.0;
    for (double x : total) rest += x;
    if (rest > 0.0) put_distance(bins, maxd, 0.0, rest);  // nothing sampled: no information
    return;
  }
  std::vector<double> extra(kc, 0.0);
  for (size_t k = 0; k < kc; ++k) {
    if (total[k] == 0.0 || samples[k] > 0.0) continue;
    size_t best = kc;
    for (size_t d = 1; d < kc && best == kc; ++d) {
      if (k >= d && samples[k - d] > 0.0)
        best = k - d;
      else if (k + d < kc && samples[k + d] > 0.0)
        best = k + d;
    }
    extra[best] += total[k];
  }
  for (size_t k = 0; k < kc; ++k) {
    if (samples[k] <= 0.0) continue;
    const double f = (total[k] + extra[k]) / samples[k];
    const auto& b = cls[k].bins();
    if (b.size() > bins.size()) bins.resize(b.size(), 0.0);
    for (size_t i = 0; i < b.size(); ++i) bins[i] += f * b[i];
    cold += f * cls[k].cold();
    if (!b.empty()) maxd = std::max(maxd, cls[k].max_distance());
  }
}

// Branch-free: an entry is written for every row, the output cursor only advances for rows
// that are sampled or hot (one hash serves both: low bits sample, high bits pick the hot
// slot). Entry: batch position (bits 0..15, n <= 2^16) | hot slot << 16 | kHot | kSampled.
size_t ShardsSampler::filter(const uint64_t* rows, size_t n, uint32_t* sel) const {
  const uint64_t mask = (uint64_t{1} << kModBits) - 1, t = threshold_;
  const HotSlot* hot_slots = hot_.data();
  size_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = rows[i];
    const uint64_t h = sample_hash(r);
    const uint32_t slot = static_cast<uint32_t>(h >> 40) & (kHotSlots - 1);
    const uint32_t hot = hot_slots[slot].tag == r + 1, smp = (h & mask) < t;
    sel[m] = static_cast<uint32_t>(i) | slot << 16 | hot * kSelHot | smp * kSelSampled;
    m += hot | smp;
  }
  return m;
}

void ShardsSampler::promote(uint64_t row) {
  const uint64_t slot = (sample_hash(row) >> 40) & (kHotSlots - 1);
  const uint64_t tag = hot_[slot].tag;
  if (tag == row + 1) return;
  if (tag != 0 && !(counts_[count_slot(tag - 1)] < counts_[count_slot(row)])) return;
  hot_[slot] = HotSlot{row + 1, 0};
  hot_stack_t_[slot] = 0;
}

void ShardsSampler::seed(const std::vector<uint64_t>& rows_oldest_first, uint64_t refs) {
  for (uint64_t row : rows_oldest_first) {
    if (!hash::sampled(row, threshold_)) continue;
    const uint64_t id = id_of(row);
    if (id >= last_time_.size()) last_time_.resize(std::max<uint64_t>(id + 1, last_time_.size() * 2), 0);
    last_time_[id] = 1;  // "read at time 0": not cold, reuse-time cap from the start
    stack_.reference(id);
  }
  now_ = std::max(now_, refs);
}

uint64_t ShardsSampler::id_of(uint64_t row) {
  if ((used_ + 1) * 2 > keys_.size()) {
    std::vector<uint64_t> ok(keys_.size() * 2, 0);
    std::vector<uint32_t> oi(ids_.size() * 2, 0);
    const uint64_t mask = ok.size() - 1;
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (!keys_[i]) continue;
      uint64_t s = mix64((keys_[i] - 1) ^ kMapSalt) & mask;
      while (ok[s]) s = (s + 1) & mask;
      ok[s] = keys_[i];
      oi[s] = ids_[i];
    }
    keys_ = std::move(ok);
    ids_ = std::move(oi);
  }
  const uint64_t mask = keys_.size() - 1;
  uint64_t s = mix64(row ^ kMapSalt) & mask;
  while (keys_[s]) {
    if (keys_[s] == row + 1) return ids_[s];
    s = (s + 1) & mask;
  }
  keys_[s] = row + 1;
  ids_[s] = static_cast<uint32_t>(used_);
  return used_++;
}

// Distinct rows among the last w references, for every w <= kWindow.
void ShardsSampler::sample_window() {
  fp_.add_window([&](uint32_t w) { return ring_[(now_ - w) & (kWindow - 1)]; });
}

// Slot in hot_reuse_ of a hot reference's reuse time d, the i-th of its batch (see internal.h:
// kReuseCopies copies of the exact bins d < 256, then StackDistanceHistogram bins >= 256).
// Branch-free (bin_of has no branch, the copy is picked with masks): hot reuse times straddle
// 256 at random, and a branch mispredicted on a large share of hot references. The copies,
// picked by i, break the store-forwarding chain of increments to the same few small bins (the
// hottest rows).
inline uint32_t reuse_slot(uint64_t d, size_t i) {
  constexpr uint32_t kE = StackDistanceHistogram::kExactBelow, kC = ShardsSampler::kReuseCopies;
  const uint32_t m = -static_cast<uint32_t>(d < kE);
  const uint32_t copy = ((static_cast<uint32_t>(i) & (kC - 1)) & m) | ((kC - 1) & ~m);
  return StackDistanceHistogram::bin_of(d) + copy * kE;
}

void ShardsSampler::process(const uint64_t* rows, size_t n) {
  // Sub-chunks of at most kStep references (the scratch arrays' size), at stream-aligned
  // places; step() makes the result independent of where they fall anyway.
  for (size_t off = 0; off < n;) {
    const size_t c = std::min<uint64_t>(n - off, kStep - now_ % kStep);
    step(rows + off, c);
    off += c;
  }
}

void ShardsSampler::step(const uint64_t* rows, size_t n) {
  // Every reference is classed by its row's running count including itself (the same
  // definition as the class totals in flush_segment()), and a row is promoted right after its
  // kHotThreshold-th reference: the piece is cut there, so that no reference sees a promotion
  // early. Nothing then depends on where calls or sub-chunks begin and end.
  uint8_t cls[kStep];
  for (size_t done = 0; done < n;) {
    size_t end = n;
    bool cross = false;
    if (stratify_) {
      uint32_t* __restrict cnt = counts_.data();
      uint64_t* __restrict by_class = class_refs_.data();
      for (size_t i = done; i < n; ++i) {
        // The count of the row kPrefetchCount references ahead (a large table's counts miss
        // the caches; the address formed as an integer, no pointer past the array).
        if (i + kPrefetchCount < n)
          __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(cnt) +
                                                           count_slot(rows[i + kPrefetchCount]) * sizeof(uint32_t)),
                             1, 3);
        uint32_t& c = cnt[count_slot(rows[i])];
        const uint32_t inc = c != UINT32_MAX;  // saturated: neither counted nor classed again
        c += inc;
        const uint32_t k = std::min<uint32_t>(kClasses - 1, 31u - static_cast<uint32_t>(__builtin_clz(c)));
        cls[i] = static_cast<uint8_t>(k);
        by_class[k] += inc;
        if (c == kHotThreshold) {
          end = i + 1;
          cross = true;
          break;
        }
      }
    } else {
      std::fill(cls + done, cls + n, uint8_t{0});
    }
    piece(rows + done, end - done, cls + done);
    if (cross) promote(rows[end - 1]);
    done = end;
  }
}

void ShardsSampler::piece(const uint64_t* rows, size_t n, const uint8_t* cls) {
  refs_ += n;
  uint32_t sel[kStep];
  static_assert(kStep <= 512);
  const double inv = 1.0 / rate_;
  uint64_t* __restrict hot_refs = hot_refs_.data();
  HotSlot* hot = hot_.data();  // not __restrict: filter() reads the tags through hot_
  uint64_t* __restrict reuse = hot_reuse_.data();
  for (size_t off = 0; off < n; off += 512) {
    const size_t c = std::min<size_t>(512, n - off);
    const size_t m = filter(rows + off, c, sel);
    // Pass 1, hot references (most of a skewed trace): a tight loop without calls. Sampled
    // entries are compacted in place (with kSelRecorded) for pass 2; the two passes share
    // no state, so splitting them changes nothing.
    size_t ns = 0;
    for (size_t i = 0; i < m; ++i) {
      uint32_t e = sel[i];
      const uint64_t t = now_ + (e & 0xffff);
      const uint32_t slot = (e >> 16) & (kHotSlots - 1);
      if (e & kSelHot) {
        const uint64_t prev = hot[slot].last;
        hot[slot].last = t + 1;
        if (prev) {
          ++reuse[reuse_slot(t - prev, i)];  // refs strictly between
          ++hot_refs[cls[e & 0xffff]];
          e |= kSelRecorded;
        }
      }
      sel[ns] = e;
      ns += (e & kSelSampled) != 0;
    }
    // Pass 2, sampled references (~rate of them): the SHARDS stack.
    for (size_t i = 0; i < ns; ++i) {
      const uint32_t e = sel[i];
      const uint64_t row = rows[off + (e & 0xffff)];
      const uint64_t t = now_ + (e & 0xffff);
      const uint32_t slot = (e >> 16) & (kHotSlots - 1);
      const bool recorded = (e & kSelRecorded) != 0;
      if (recorded) {
        if (t - hot_stack_t_[slot] < kHotRefresh) continue;
        hot_stack_t_[slot] = t;
      }
      const uint32_t k = cls[e & 0xffff];
      const uint64_t id = id_of(row);
      if (id >= last_time_.size()) last_time_.resize(std::max<uint64_t>(id + 1, last_time_.size() * 2), 0);
      const uint64_t prev = last_time_[id];
      last_time_[id] = t + 1;
      const uint64_t d = stack_.reference(id);
      if (recorded) continue;
      samples_[k] += 1.0;
      if (d == MattsonStack::kCold || prev == 0) {
        cls_[k].add_cold(1.0);
        continue;
      }
      double est = (d == 0 ? 0.5 : static_cast<double>(d)) * inv;
      est = std::min(est, static_cast<double>(t - prev));
      cls_[k].add(static_cast<uint64_t>(std::llround(est)), 1.0);
    }
    // The recent-trace ring and the footprint windows.
    size_t i = 0;
    while (i < c) {
      // One footprint window per kWindowEvery references, 8x fewer once 256 are averaged.
      const uint64_t every = fp_.windows() < 256.0 ? kWindowEvery : 8 * uint64_t{kWindowEvery};
      const uint64_t next_b = (now_ / every + 1) * every;
      const size_t upto = std::min<uint64_t>(c, i + (next_b - now_));
      // Only the last kWindow references before a window boundary are ever read.
      const uint64_t first_needed = next_b - kWindow;
      if (now_ < first_needed) {
        const size_t skip = std::min<uint64_t>(upto - i, first_needed - now_);
        i += skip;
        now_ += skip;
      }
      for (; i < upto; ++i, ++now_) ring_[now_ & (kWindow - 1)] = rows[off + i];
      if (now_ == next_b && now_ >= kWindow) sample_window();
    }
  }
}

void ShardsSampler::flush_segment(StackDistanceHistogram& out) {
  // The estimate of the whole stream so far, from the cumulative state alone.
  std::vector<double> bins;
  double cold = 0.0;
  uint64_t maxd = 0;
  auto put = [&](double dist, double w) { put_distance(bins, maxd, dist, w); };
  // Hot rows: every reference, distance = footprint of its reuse time.
  double hot_total = 0.0;
  uint64_t hot_bound = 0;  // the largest reuse time recorded: fp(t) <= t bounds the distances
  const uint32_t kE = StackDistanceHistogram::kExactBelow;
  std::vector<uint64_t> hb(hot_reuse_.begin() + (kReuseCopies - 1) * kE, hot_reuse_.end());
  for (uint32_t c = 0; c + 1 < kReuseCopies; ++c)
    for (uint32_t b = 0; b < kE; ++b) hb[b] += hot_reuse_[c * kE + b];
  for (size_t b = 0; b < hb.size(); ++b) {
    if (hb[b] == 0) continue;
    const uint64_t lo = StackDistanceHistogram::bin_lower(static_cast<uint32_t>(b));
    const uint64_t up = StackDistanceHistogram::bin_upper(static_cast<uint32_t>(b));
    const double t = (static_cast<double>(lo) + static_cast<double>(up - 1)) / 2.0;
    put(fp_.at(t), static_cast<double>(hb[b]));
    hot_total += static_cast<double>(hb[b]);
    hot_bound = up;
  }
  // Everything else: sampled references, each class scaled to its exact reference count.
  std::vector<double> total(kClasses, 0.0);
  if (stratify_) {
    // References per class by running count (class_refs_, tallied by the count pass). Classes are by
    // running count for the totals but by count at the end of a sub-chunk for the hot
    // references, so a difference can go negative: clamp, then rescale so that the classes
    // add up to exactly the references not covered by the hot path.
    double sum = 0.0;
    for (size_t k = 0; k < kClasses; ++k) {
      total[k] = std::max(0.0, static_cast<double>(class_refs_[k]) - static_cast<double>(hot_refs_[k]));
      sum += total[k];
    }
    const double want = std::max(0.0, static_cast<double>(refs_) - hot_total);
    if (sum > 0.0)
      for (double& x : total) x *= want / sum;
  } else {
    total[0] = std::max(0.0, static_cast<double>(refs_) - hot_total);
  }
  add_stratified(bins, cold, maxd, cls_, samples_, total);
  // Hand out the difference to what was handed out before. Both are on the grid of
  // 2^-kQuantBits and far below 2^(52 - kQuantBits), so every sum and difference of them is
  // exact: whatever the flushes, the merged additions are this estimate, bit for bit.
  const double q = std::ldexp(1.0, kQuantBits);
  auto quant = [&](double x) { return std::nearbyint(x * q) / q; };
  std::vector<double> ob = out.bins();
  const size_t nb = std::max({ob.size(), bins.size(), given_bins_.size()});
  ob.resize(nb, 0.0);
  given_bins_.resize(nb, 0.0);
  for (size_t i = 0; i < nb; ++i) {
    const double v = i < bins.size() ? quant(bins[i]) : 0.0;
    ob[i] += v - given_bins_[i];
    given_bins_[i] = v;
  }
  const double vc = quant(cold);
  const double oc = out.cold() + (vc - given_cold_);
  given_cold_ = vc;
  // The largest distance: a bound that only grows with the stream (the sampled stack's
  // largest estimate, the largest hot reuse time), so that the maximum over all additions is
  // the same wherever the flushes fell.
  uint64_t bound = hot_bound;
  for (const auto& h : cls_)
    if (!h.bins().empty()) bound = std::max(bound, h.max_distance());
  out.set(std::move(ob), oc, std::max(out.max_distance(), bound));
}

}  // namespace edo::stats::detail
