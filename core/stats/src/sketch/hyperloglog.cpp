// HyperLogLog (Flajolet et al. 2007) with the linear-counting small-range correction.
#include <algorithm>
#include <cmath>

#include "internal.h"

namespace edo::stats::detail {

void HyperLogLog::reset(uint32_t precision) {
  p_ = std::clamp<uint32_t>(precision, 4, 18);
  reg_.assign(size_t{1} << p_, 0);
}

double HyperLogLog::estimate() const {
  if (reg_.empty()) return 0.0;
  const double m = static_cast<double>(reg_.size());
  double sum = 0.0;
  size_t zeros = 0;
  for (uint8_t r : reg_) {
    sum += std::ldexp(1.0, -static_cast<int>(r));
    zeros += r == 0;
  }
  const double alpha = 0.7213 / (1.0 + 1.079 / m);
  double e = alpha * m * m / sum;
  if (e <= 2.5 * m && zeros > 0) e = m * std::log(m / static_cast<double>(zeros));
  return e;
}

bool HyperLogLog::merge(const HyperLogLog& o) {
  if (o.p_ != p_) return false;
  for (size_t i = 0; i < reg_.size(); ++i) reg_[i] = std::max(reg_[i], o.reg_[i]);
  return true;
}

void HyperLogLog::clear() { std::fill(reg_.begin(), reg_.end(), 0); }

bool HyperLogLog::empty() const {
  return std::all_of(reg_.begin(), reg_.end(), [](uint8_t v) { return v == 0; });
}

}  // namespace edo::stats::detail
