#include "cache_replay.h"

#include "edo/stats/che_lru.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <unordered_map>

namespace edo::tuner {
namespace {

// Fenwick tree over reference indices: 1 at the latest reference of each row seen so far, so
// the sum between a row's previous reference and now counts the distinct rows in between
// (Mattson's stack distance, Bennett and Kruskal's O(n log n) way).
class Fenwick {
 public:
  explicit Fenwick(size_t n) : t_(n + 1, 0) {}
  void add(size_t i, int v) {
    for (++i; i < t_.size(); i += i & (~i + 1)) t_[i] += v;
  }
  int64_t prefix(size_t i) const {  // sum over [0, i)
    int64_t s = 0;
    for (; i > 0; i -= i & (~i + 1)) s += t_[i];
    return s;
  }

 private:
  std::vector<int64_t> t_;
};

// Why an ordered sample cannot be replayed (null when it can).
const char* unusable(const stats::OrderedSample* s) {
  if (!s) return "recording has no ordered sample";
  if (!s->valid) return "the ordered sample is not one stream's order (several processes, or counted on a GPU)";
  if (s->threshold == 0 || s->end - s->begin < 2) return "the ordered sample is empty";
  return nullptr;
}

}  // namespace

std::optional<CacheReplay> CacheReplay::of(const stats::TableAggregate& counts, std::string& why_not, double fit_fraction) {
  const stats::OrderedSample* s = counts.ordered_sample();
  if (const char* why = unusable(s)) {
    why_not = why;
    return std::nullopt;
  }
  CacheReplay r;
  r.rate_ = s->rate();
  r.split_ = s->begin + static_cast<uint64_t>(std::floor(fit_fraction * static_cast<double>(s->end - s->begin)));
  // A whole stream (rate 1) is replayed as it is; a sample of exact counts is post-stratified.
  r.stratified_ = r.rate_ < 1.0 && counts.mode() == stats::CountMode::kExact;
  auto class_of = [&](uint64_t row) -> uint32_t {
    return r.stratified_ ? static_cast<uint32_t>(std::bit_width(counts.count(row))) : 0u;
  };
  const auto& refs = s->refs;
  Fenwick bit(refs.size());
  std::unordered_map<uint64_t, size_t> last;  // row -> index of its latest reference
  struct RowRefs {
    uint64_t fit = 0, held = 0;
    uint32_t cls = 0;
  };
  std::unordered_map<uint64_t, RowRefs> per_row;
  last.reserve(refs.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    uint64_t d = UINT64_MAX;
    const auto it = last.find(refs[i].row);
    if (it != last.end()) {
      d = static_cast<uint64_t>(bit.prefix(i) - bit.prefix(it->second + 1));
      bit.add(it->second, -1);
      it->second = i;
    } else {
      last.emplace(refs[i].row, i);
    }
    bit.add(i, 1);
    auto [pr, fresh] = per_row.try_emplace(refs[i].row);
    if (fresh) pr->second.cls = class_of(refs[i].row);
    if (refs[i].position < r.split_) {
      r.fit_.d[pr->second.cls].push_back(d);
      ++pr->second.fit;
      ++r.fit_refs_;
    } else {
      r.held_.d[pr->second.cls].push_back(d);
      ++pr->second.held;
      ++r.held_refs_;
    }
  }
  if (r.held_refs_ == 0 || r.fit_refs_ == 0) {
    why_not = r.fit_refs_ == 0 ? "the ordered sample has no references before the cut" : "the ordered sample has no held-out references";
    return std::nullopt;
  }
  for (auto* part : {&r.fit_, &r.held_})
    for (auto& v : part->d) std::sort(v.begin(), v.end());
  r.weigh_classes(counts, *s);
  std::vector<std::pair<uint64_t, uint64_t>> rows;  // (fit count, row) of rows read before the cut
  for (const auto& [row, c] : per_row)
    if (c.fit > 0) rows.emplace_back(c.fit, row);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  for (const auto& [n, row] : rows) {
    const RowRefs& rr = per_row[row];
    r.hot_held_.emplace_back(rr.cls, rr.held);
  }
  return r;
}

void CacheReplay::weigh_classes(const stats::TableAggregate& counts, const stats::OrderedSample& s) {
  if (!stratified_) {
    fit_.weight[0] = held_.weight[0] = 1.0;
    return;
  }
  // Each class's lookups in the recording, split between the parts as its sampled references
  // are (a class the sample missed: as the positions are).
  std::array<double, kClasses> total{};
  std::unordered_map<uint64_t, uint64_t> rows_with;
  counts.for_each_nonzero([&](uint64_t, uint64_t c) {
    total[static_cast<size_t>(std::bit_width(c))] += static_cast<double>(c);
    ++rows_with[c];
    lookups_ += static_cast<double>(c);
  });
  // Counts above 1024 are binned (128 bins an octave, each at its rows' mean count) so that
  // Che's fixed point, solved per cache size, sums over a few thousand terms at most.
  std::map<uint64_t, std::pair<double, double>> bins;  // bin -> (rows, lookups)
  for (const auto& [c, n] : rows_with) {
    const auto w = static_cast<uint64_t>(std::bit_width(c));
    const uint64_t bin = c <= 1024 ? c : (w << 32) | ((c >> (w - 8)) & 0x7f);
    auto& b = bins[bin];
    b.first += static_cast<double>(n);
    b.second += static_cast<double>(n) * static_cast<double>(c);
  }
  for (const auto& [bin, b] : bins) {
    const auto mean = static_cast<uint64_t>(std::llround(b.second / b.first));
    count_rows_.emplace_back(mean, static_cast<uint64_t>(std::llround(b.first)));
  }
  std::sort(count_rows_.begin(), count_rows_.end(), std::greater<>());
  const double positions_held = static_cast<double>(s.end - split_) / static_cast<double>(s.end - s.begin);
  for (size_t c = 0; c < kClasses; ++c) {
    const double nf = static_cast<double>(fit_.d[c].size()), nh = static_cast<double>(held_.d[c].size());
    const double held_share = nf + nh > 0 ? nh / (nf + nh) : positions_held;
    fit_.weight[c] = total[c] * (1.0 - held_share);
    held_.weight[c] = total[c] * held_share;
  }
}

double CacheReplay::combine(const Rates& weight, const Rates& rate, const std::array<bool, kClasses>& known, const Rates* model) {
  const size_t hottest = hottest_known(known);
  double sum = 0, wsum = 0;
  for (size_t c = 0; c < kClasses; ++c) {
    if (weight[c] <= 0) continue;
    if (!known[c] && c > hottest && model && (*model)[c] >= 0) {
      sum += weight[c] * (*model)[c];
      wsum += weight[c];
      continue;
    }
    // The nearest class with references, hotter first.
    for (size_t step = 0; step < kClasses; ++step) {
      const size_t up = c + step;
      if (up < kClasses && known[up]) {
        sum += weight[c] * rate[up];
        wsum += weight[c];
        break;
      }
      if (step > 0 && step <= c && known[c - step]) {
        sum += weight[c] * rate[c - step];
        wsum += weight[c];
        break;
      }
    }
  }
  return wsum > 0 ? sum / wsum : 0.0;
}

size_t CacheReplay::hottest_known(const std::array<bool, kClasses>& known) {
  size_t hottest = 0;
  for (size_t c = 0; c < kClasses; ++c)
    if (known[c]) hottest = c;
  return hottest;
}

bool CacheReplay::needs_model(const Rates& weight, const std::array<bool, kClasses>& known) {
  for (size_t c = hottest_known(known) + 1; c < kClasses; ++c)
    if (weight[c] > 0) return true;
  return false;
}

CacheReplay::Model CacheReplay::che_lru(double k, size_t above) const {
  Model out;
  out.rate.fill(-1.0);
  if (!stratified_ || lookups_ <= 0) return out;
  const stats::CheLru m = stats::che_lru(count_rows_, lookups_, k, above);
  out.rate = m.rate;
  out.rows_held = m.rows_held;
  return out;
}

CacheReplay::Model CacheReplay::top_k(double k, size_t above) const {
  // The share of each class's lookups that fall on the k most read rows of the recording.
  Model out;
  out.rate.fill(-1.0);
  if (!stratified_) return out;
  Rates in{}, refs{};
  double left = std::floor(k);
  for (const auto& [c, n] : count_rows_) {
    const size_t cls = static_cast<size_t>(std::bit_width(c));
    const double take = std::min(left, static_cast<double>(n));
    left -= take;
    if (cls <= above) continue;
    in[cls] += take * static_cast<double>(c);
    refs[cls] += static_cast<double>(n) * static_cast<double>(c);
    out.rows_held += take;
  }
  for (size_t c = 0; c < kClasses; ++c)
    if (refs[c] > 0) out.rate[c] = in[c] / refs[c];
  return out;
}

double CacheReplay::lru_rate(const Part& p, double cache_rows) const {
  std::array<bool, kClasses> known{};
  for (size_t c = 0; c < kClasses; ++c) known[c] = !p.d[c].empty();
  // Rows of the classes the sample missed take their room in the cache first (the sampled
  // rows stand for the others: SHARDS scaling on what is left).
  std::optional<Model> model;
  if (needs_model(p.weight, known)) model = che_lru(cache_rows, hottest_known(known));
  const double slots = std::max(0.0, cache_rows - (model ? model->rows_held : 0.0)) * rate_;
  Rates rate{};
  for (size_t c = 0; c < kClasses; ++c) {
    const auto& v = p.d[c];
    if (v.empty()) continue;
    // References whose stack distance d < slots hit an LRU of `slots` entries.
    const auto end = std::partition_point(v.begin(), v.end(), [&](uint64_t d) { return static_cast<double>(d) < slots; });
    rate[c] = static_cast<double>(end - v.begin()) / static_cast<double>(v.size());
  }
  return combine(p.weight, rate, known, model ? &model->rate : nullptr);
}

double CacheReplay::lru_hit_rate(uint64_t cache_rows) const { return lru_rate(held_, static_cast<double>(cache_rows)); }

double CacheReplay::fit_lru_hit_rate(uint64_t cache_rows) const { return lru_rate(fit_, static_cast<double>(cache_rows)); }

double CacheReplay::static_hit_rate(uint64_t cache_rows) const {
  std::array<bool, kClasses> known{};
  for (size_t c = 0; c < kClasses; ++c) known[c] = !held_.d[c].empty();
  std::optional<Model> model;
  if (needs_model(held_.weight, known)) model = top_k(static_cast<double>(cache_rows), hottest_known(known));
  // (k - rows the model holds) * rate sampled rows stand for the rest of the hot set.
  const double left = std::max(0.0, static_cast<double>(cache_rows) - (model ? model->rows_held : 0.0));
  const auto n = std::min<size_t>(hot_held_.size(), static_cast<size_t>(std::llround(left * rate_)));
  Rates hits{}, rate{};
  for (size_t i = 0; i < n; ++i) hits[hot_held_[i].first] += static_cast<double>(hot_held_[i].second);
  for (size_t c = 0; c < kClasses; ++c)
    if (known[c]) rate[c] = hits[c] / static_cast<double>(held_.d[c].size());
  return combine(held_.weight, rate, known, model ? &model->rate : nullptr);
}

std::vector<uint64_t> CacheReplay::fitted_cache_rows(uint64_t rows) const {
  std::vector<uint64_t> out;
  if (rows < 2) return out;
  for (double target : {0.5, 0.8, 0.9, 0.95, 0.99}) {
    // The smallest cache (rows) whose hits before the cut reach the target: the rate grows
    // with the cache and only steps at the sampled stack distances (the rows the model holds
    // aside), so this is one of the sample's own points.
    auto reaches = [&](uint64_t k) { return lru_rate(fit_, static_cast<double>(k)) >= target - 1e-12; };
    if (!reaches(rows - 1)) continue;
    uint64_t lo = 1, hi = rows - 1;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (reaches(mid)) hi = mid;
      else lo = mid + 1;
    }
    out.push_back(lo);
  }
  std::sort(out.begin(), out.end());
  std::vector<uint64_t> merged;
  for (uint64_t k : out)
    if (merged.empty() || static_cast<double>(k) > 1.05 * static_cast<double>(merged.back())) merged.push_back(k);
  return merged;
}

uint64_t CacheReplay::knee_cache_rows(uint64_t rows) const {
  if (rows < 2) return 0;
  const double R = static_cast<double>(rows);
  const double whole = lru_rate(fit_, R);
  if (!(whole > 0)) return 0;
  uint64_t best = 0;
  double best_gap = 0;
  constexpr int kPoints = 256;
  uint64_t last = 0;
  for (int i = 0; i <= kPoints; ++i) {
    const auto k = static_cast<uint64_t>(std::llround(std::pow(R - 1, static_cast<double>(i) / kPoints)));
    if (k <= last || k >= rows) continue;
    last = k;
    const double gap = lru_rate(fit_, static_cast<double>(k)) / whole - static_cast<double>(k) / R;
    if (gap > best_gap + 1e-12) {
      best_gap = gap;
      best = k;
    }
  }
  if (best == 0) return 0;
  // The rate steps at the sample's stack distances: the smallest size with the knee's hits.
  const double at = lru_rate(fit_, static_cast<double>(best));
  uint64_t lo = 1, hi = best;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (lru_rate(fit_, static_cast<double>(mid)) >= at - 1e-12) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

}  // namespace edo::tuner
