// SHARDS fixed-rate spatial sampling in front of the Mattson stack.
#include <algorithm>
#include <cmath>

#include "internal.h"

namespace edo::stats::detail {

namespace {
constexpr uint64_t kSampleSalt = 0x5bd1e9955bd1e995ULL;
constexpr uint64_t kMapSalt = 0x2545f4914f6cdd1dULL;
}  // namespace

ShardsSampler::ShardsSampler(double rate) {
  rate = std::clamp(rate, 1.0 / (1u << kModBits), 1.0);
  threshold_ = static_cast<uint64_t>(std::llround(rate * (1u << kModBits)));
  if (threshold_ == 0) threshold_ = 1;
  rate_ = static_cast<double>(threshold_) / (1u << kModBits);
  keys_.assign(1024, 0);
  ids_.assign(1024, 0);
}

// Branch-free: every row is written, the output cursor only advances for sampled rows.
size_t ShardsSampler::filter(const uint64_t* rows, size_t n, uint64_t* out) const {
  const uint64_t mask = (uint64_t{1} << kModBits) - 1, t = threshold_;
  size_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = rows[i];
    out[m] = r;
    m += (mix64(r ^ kSampleSalt) & mask) < t;
  }
  return m;
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

uint64_t ShardsSampler::process(const uint64_t* rows, size_t n, StackDistanceHistogram& h) {
  uint64_t buf[512];
  const double w = 1.0 / rate_;
  uint64_t sampled = 0;
  for (size_t off = 0; off < n; off += 512) {
    const size_t c = std::min<size_t>(512, n - off);
    const size_t m = filter(rows + off, c, buf);
    sampled += m;
    for (size_t i = 0; i < m; ++i) {
      const uint64_t d = stack_.reference(id_of(buf[i]));
      if (d == MattsonStack::kCold)
        h.add_cold(w);
      else
        h.add(static_cast<uint64_t>(std::llround(static_cast<double>(d) * w)), w);
    }
  }
  return sampled;
}

}  // namespace edo::stats::detail
