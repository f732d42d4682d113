// The ordered sample of a table's stream (edo/stats/ordered_sample.h): SHARDS-style spatial
// sampling of rows, every reference of a sampled row kept in order, bounded by lowering the
// threshold (fixed-size SHARDS, Waldspurger et al., FAST '15, section 4.2, applied to
// references instead of distinct rows: it is the references that are stored).
#include "edo/stats/ordered_sample.h"

#include <algorithm>
#include <bit>

#include "internal.h"

namespace edo::stats {

void OrderedSample::lower_threshold(uint64_t t) {
  if (t >= threshold) return;
  threshold = t;
  refs.erase(std::remove_if(refs.begin(), refs.end(), [&](const OrderedRef& r) { return !keeps(r.row, t); }), refs.end());
}

void OrderedSample::append(const OrderedSample& next) {
  if (next.begin != end || !next.valid) valid = false;
  end = std::max(end, next.end);
  const uint64_t t = std::min(threshold, next.threshold);
  lower_threshold(t);
  refs.reserve(refs.size() + next.refs.size());
  for (const auto& r : next.refs)
    if (keeps(r.row, t)) refs.push_back(r);
  if (!valid) refs.clear();  // positions of two streams do not make one order
}

void OrderedSample::encode(std::string& out) const {
  detail::put_varint(out, threshold);
  detail::put_varint(out, begin);
  detail::put_varint(out, end);
  out.push_back(valid ? 1 : 0);
  detail::put_varint(out, refs.size());
  uint64_t p = begin;
  for (const auto& r : refs) {
    detail::put_varint(out, r.position - p);
    detail::put_varint(out, r.row);
    p = r.position;
  }
}

bool OrderedSample::decode(std::string_view& in, OrderedSample& out) {
  uint64_t n = 0;
  if (!detail::get_varint(in, out.threshold) || out.threshold > kFullThreshold) return false;
  if (!detail::get_varint(in, out.begin) || !detail::get_varint(in, out.end) || out.end < out.begin || in.empty())
    return false;
  const uint8_t v = static_cast<uint8_t>(in.front());
  in.remove_prefix(1);
  if (v > 1) return false;
  out.valid = v == 1;
  // Each reference takes at least two bytes; a count beyond what is left is damage.
  if (!detail::get_varint(in, n) || n > in.size() / 2 || n > out.end - out.begin) return false;
  out.refs.resize(n);
  uint64_t p = out.begin;
  for (uint64_t k = 0; k < n; ++k) {
    uint64_t gap = 0;
    if (!detail::get_varint(in, gap) || (k > 0 && gap == 0) || gap >= out.end - p) return false;
    p += gap;
    out.refs[k].position = p;
    if (!detail::get_varint(in, out.refs[k].row) || !keeps(out.refs[k].row, out.threshold)) return false;
  }
  return true;
}

namespace {
// decode()'s header checks; the fields check() needs.
bool read_header(std::string_view& in, uint64_t& threshold, uint64_t& begin, uint64_t& end, uint64_t& n) {
  if (!detail::get_varint(in, threshold) || threshold > OrderedSample::kFullThreshold) return false;
  if (!detail::get_varint(in, begin) || !detail::get_varint(in, end) || end < begin || in.empty()) return false;
  const uint8_t v = static_cast<uint8_t>(in.front());
  in.remove_prefix(1);
  if (v > 1) return false;
  return detail::get_varint(in, n) && n <= in.size() / 2 && n <= end - begin;
}
}  // namespace

bool OrderedSample::check_header(std::string_view& in) {
  uint64_t threshold = 0, begin = 0, end = 0, n = 0;
  return read_header(in, threshold, begin, end, n);
}

bool OrderedSample::check(std::string_view& in, uint64_t rows) {
  uint64_t threshold = 0, begin = 0, end = 0, n = 0;
  if (!read_header(in, threshold, begin, end, n)) return false;
  const bool every_row = threshold == kFullThreshold;  // keeps() holds for every row
  uint64_t p = begin;
  for (uint64_t k = 0; k < n; ++k) {
    uint64_t gap = 0, row = 0;
    if (!detail::get_varint_inline(in, gap) || (k > 0 && gap == 0) || gap >= end - p) return false;
    p += gap;
    if (!detail::get_varint_inline(in, row) || row >= rows || (!every_row && !keeps(row, threshold))) return false;
  }
  return true;
}

namespace {
// The halvings of the full threshold that still keep a row whose sample hash (masked) is h.
uint32_t level_of_hash(uint64_t h) { return hash::kSampleModBits - static_cast<uint32_t>(std::bit_width(h)); }
}  // namespace

uint32_t OrderedSampler::level_of(uint64_t row) { return level_of_hash(hash::sample_hash(row) & hash::kSampleMask); }

void OrderedSampler::keep(uint64_t row) {
  if (pending_.size() == pending_.capacity()) drop_unkept();  // grow only for kept references
  pending_.push_back({position_, row});
  ++kept_;
  ++by_level_[level_of(row)];
  if (kept_ <= max_refs_) return;
  // One reference too many: halve the threshold until the whole stream's kept references fit
  // again (level kSampleModBits + 1: threshold 0, nothing is kept any more).
  while (kept_ > max_refs_ && level_ <= hash::kSampleModBits) {
    kept_ -= by_level_[level_];
    ++level_;
    threshold_ = level_ > hash::kSampleModBits ? 0 : OrderedSample::kFullThreshold >> level_;
  }
  // The pending references above the new threshold are dropped later (drop_unkept()): before
  // the vector would grow, and at take(). Dropping them here cost a pass over every pending
  // reference per halving, and on a skewed table whose kept references sit on a few hot rows
  // a halving frees only a few of them, so the next one comes a few references later.
  unkept_pending_ = true;
}

void OrderedSampler::drop_unkept() {
  if (!unkept_pending_) return;
  const uint64_t t = threshold_;
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [t](const OrderedRef& r) { return !OrderedSample::keeps(r.row, t); }),
                 pending_.end());
  unkept_pending_ = false;
}

// The per-index loop: one hash per index for both the sample test and the level, and no
// branch on the test (a table kept at about half its rows would mispredict every other index):
// 256 indices at a time, each written past the kept ones in a scratch block on the stack (no
// zeroed vector growth) and the count advanced by the test's result, then the kept ones
// appended. The bound is checked per index (predicted: it is reached rarely); the reference
// one too many goes through keep(), which lowers the threshold.
void OrderedSampler::add(const uint64_t* rows, size_t n) {
  struct Raw {
    uint64_t position, row;
  };
  constexpr size_t kBlock = 256;
  Raw block[kBlock];
  size_t i = 0;
  while (i < n) {
    const uint64_t t = threshold_;
    if (t == 0) {  // nothing is kept any more
      position_ += n - i;
      return;
    }
    const size_t stop = std::min(n, i + kBlock);
    size_t k = 0;
    uint64_t kept = kept_;
    const uint64_t room = max_refs_;
    bool over = false;
    for (; i < stop; ++i, ++position_) {
      const uint64_t h = hash::sample_hash(rows[i]) & hash::kSampleMask;
      const bool in = h < t;  // keeps(): the sample test of row_hash.h
      if (__builtin_expect(in && kept >= room, 0)) {
        over = true;
        break;
      }
      block[k] = {position_, rows[i]};
      k += in;
      kept += in;
      by_level_[level_of_hash(h)] += in;  // a row not kept adds 0
    }
    kept_ = kept;
    // The vector grows only for kept references: it holds at most twice the references kept
    // at the current threshold, as before (state_bound.cpp's 2 x 16 bytes a reference).
    if (pending_.capacity() < pending_.size() + k) drop_unkept();
    const size_t base = pending_.size();
    if (pending_.capacity() < base + k) pending_.reserve(std::max(base + k, 2 * pending_.capacity()));
    for (size_t j = 0; j < k; ++j) pending_.push_back({block[j].position, block[j].row});
    if (over) {
      keep(rows[i]);  // the one too many: the threshold falls
      ++i;
      ++position_;
    }
  }
}

void OrderedSampler::skip(uint64_t n) {
  position_ += n;
  valid_ = false;
}

OrderedSample OrderedSampler::take() {
  drop_unkept();
  OrderedSample s;
  s.threshold = threshold_;
  s.begin = begin_;
  s.end = position_;
  s.valid = valid_;
  s.refs = std::move(pending_);
  pending_.clear();
  begin_ = position_;
  return s;
}

}  // namespace edo::stats
