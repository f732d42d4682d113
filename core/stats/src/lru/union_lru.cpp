// The union LRU curve of several ranks' streams (edo/stats/union_lru.h).
#include "edo/stats/union_lru.h"

#include "edo/stats/che_lru.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <map>

#include "internal.h"

namespace edo::stats {

namespace {

// Calls f(stream, ref) for the references of `samples` kept at `threshold`, in lock-step order:
// ascending (position - begin) / (end - begin), ties by stream index. Each stream is in
// position order already: a k-way merge of their heads (n log k, nothing copied).
// (pa - ba) / la < (pb - bb) / lb  <=>  (pa - ba) * lb < (pb - bb) * la: exact in 128 bits, so
// that equal progress (two ranks of equal lengths, step by step) is a tie, broken by rank.
template <class F>
void for_each_interleaved(const std::vector<const OrderedSample*>& samples, uint64_t threshold, F&& f) {
  struct Head {
    uint64_t offset, length;
    uint32_t stream;
    size_t next;  // index of the head's reference in its sample
  };
  auto later = [](const Head& a, const Head& b) {  // the heap's order: the earliest on top
    const unsigned __int128 l = static_cast<unsigned __int128>(a.offset) * b.length;
    const unsigned __int128 r = static_cast<unsigned __int128>(b.offset) * a.length;
    if (l != r) return l > r;
    return a.stream > b.stream;
  };
  std::vector<Head> heap;
  auto push_from = [&](uint32_t k, size_t i) {
    const OrderedSample& s = *samples[k];
    while (i < s.refs.size() && !OrderedSample::keeps(s.refs[i].row, threshold)) ++i;
    if (i == s.refs.size()) return;
    heap.push_back({s.refs[i].position - s.begin, std::max<uint64_t>(1, s.end - s.begin), k, i});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (uint32_t k = 0; k < samples.size(); ++k) push_from(k, 0);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Head h = heap.back();
    heap.pop_back();
    f(h.stream, samples[h.stream]->refs[h.next]);
    push_from(h.stream, h.next + 1);
  }
}

}  // namespace

std::vector<InterleavedRef> interleave_by_progress(const std::vector<OrderedSample>& samples) {
  std::vector<const OrderedSample*> p;
  uint64_t threshold = OrderedSample::kFullThreshold;
  for (const auto& s : samples) {
    p.push_back(&s);
    threshold = std::min(threshold, s.threshold);
  }
  std::vector<InterleavedRef> out;
  for_each_interleaved(p, threshold, [&](uint32_t k, const OrderedRef& r) { out.push_back({k, r}); });
  return out;
}

// Per class (floor(log2 union count) + 1; one class 0 when not stratified) the sorted stack
// distances of the sampled references (UINT64_MAX: a row's first), each class's lookups in the
// union, and the union's counts for the independent-reference model of unsampled hot classes.
struct UnionLru::Estimator {
  static constexpr size_t kClasses = 65;
  using Rates = std::array<double, kClasses>;
  double rate = 1.0;
  double ceiling = 1.0;
  double expected = 0.0;  // lookups * rate: the sampled references SHARDS expects
  double adjust = 0.0;    // unstratified below rate 1: SHARDS_adj's hits at distance 0
  bool stratified = false;
  std::array<std::vector<uint64_t>, kClasses> d;
  Rates weight{};
  // (count, rows with about that count), most read first; counts above 1024 binned (128 bins
  // an octave, each at its rows' mean) so that Che's fixed point sums a few thousand terms.
  std::vector<std::pair<uint64_t, uint64_t>> count_rows;
  double lookups = 0.0;

  double hit(uint64_t cache_rows) const {
    if (cache_rows == 0 || expected <= 0.0) return 0.0;
    const double k = static_cast<double>(cache_rows);
    if (!stratified) {
      const auto& v = d[0];
      const double slots = k * rate;  // an LRU of k rows: k * rate sampled rows
      const auto hits = std::partition_point(v.begin(), v.end(), [&](uint64_t x) { return static_cast<double>(x) < slots; }) - v.begin();
      return std::clamp((static_cast<double>(hits) + adjust) / expected, 0.0, ceiling);
    }
    std::array<bool, kClasses> known{};
    size_t hottest = 0;
    for (size_t c = 0; c < kClasses; ++c)
      if ((known[c] = !d[c].empty())) hottest = c;
    bool needs_model = false;
    for (size_t c = hottest + 1; c < kClasses; ++c) needs_model |= weight[c] > 0;
    Rates model;
    model.fill(-1.0);
    double rows_held = 0.0;
    if (needs_model) {
      const CheLru m = che_lru(count_rows, lookups, k, hottest);
      model = m.rate;
      rows_held = m.rows_held;
    }
    // The rows of the classes the sample missed take their room first; the sampled rows stand
    // for the others (SHARDS scaling on what is left).
    const double slots = std::max(0.0, k - rows_held) * rate;
    Rates r{};
    for (size_t c = 0; c < kClasses; ++c) {
      if (!known[c]) continue;
      const auto& v = d[c];
      const auto n = std::partition_point(v.begin(), v.end(), [&](uint64_t x) { return static_cast<double>(x) < slots; }) - v.begin();
      r[c] = static_cast<double>(n) / static_cast<double>(v.size());
    }
    double sum = 0.0, wsum = 0.0;
    for (size_t c = 0; c < kClasses; ++c) {
      if (weight[c] <= 0) continue;
      if (!known[c] && c > hottest && model[c] >= 0) {
        sum += weight[c] * model[c];
        wsum += weight[c];
        continue;
      }
      for (size_t step = 0; step < kClasses; ++step) {  // the nearest sampled class, hotter first
        if (c + step < kClasses && known[c + step]) {
          sum += weight[c] * r[c + step];
          wsum += weight[c];
          break;
        }
        if (step > 0 && step <= c && known[c - step]) {
          sum += weight[c] * r[c - step];
          wsum += weight[c];
          break;
        }
      }
    }
    return std::clamp(wsum > 0 ? sum / wsum : 0.0, 0.0, ceiling);
  }

};

double UnionLru::hit_rate(uint64_t cache_rows) const { return available && estimator ? estimator->hit(cache_rows) : 0.0; }

UnionLru union_lru(const std::vector<RankSample>& ranks, const TableAggregate& merged) {
  UnionLru u;
  u.ranks = ranks.size();
  u.lookups = merged.lookups();
  auto unavailable = [&](std::string why) {
    u.available = false;
    u.why_not = std::move(why);
    return u;
  };
  if (ranks.size() < 2) return unavailable("fewer than two ranks read the table");
  uint64_t threshold = OrderedSample::kFullThreshold;
  for (const auto& r : ranks) {
    const std::string who = "rank " + std::to_string(r.rank);
    if (!r.sample)
      return unavailable(who + "'s recording has no ordered sample of the table (recorded by an older edo, or "
                               "without LRU tracking)");
    if (!r.sample->valid)
      return unavailable(who + "'s ordered sample is not one stream's order (the table was counted on a GPU, or "
                               "several of its processes read it)");
    threshold = std::min(threshold, r.sample->threshold);
  }
  if (threshold == 0) return unavailable("a rank's ordered sample kept no rows (its stream was too long for the bound)");
  // Every rank's sample at the lowest threshold (the same rows in all of them), interleaved.
  std::vector<const OrderedSample*> samples;
  for (const auto& r : ranks) samples.push_back(r.sample);
  auto e = std::make_shared<UnionLru::Estimator>();
  u.rate = e->rate = static_cast<double>(threshold) / static_cast<double>(OrderedSample::kFullThreshold);
  e->expected = static_cast<double>(u.lookups) * u.rate;
  if (e->expected <= 0.0) return unavailable("the ranks read nothing of the table");
  const uint64_t unique = merged.unique_rows();
  u.ceiling = e->ceiling = u.lookups == 0 ? 1.0 : std::max(0.0, 1.0 - static_cast<double>(unique) / static_cast<double>(u.lookups));
  u.stratified = e->stratified = u.rate < 1.0 && merged.mode() == CountMode::kExact;
  if (e->stratified) {
    std::map<uint64_t, std::pair<double, double>> bins;  // bin -> (rows, lookups)
    merged.for_each_nonzero([&](uint64_t, uint64_t c) {
      e->weight[static_cast<size_t>(std::bit_width(c))] += static_cast<double>(c);
      e->lookups += static_cast<double>(c);
      const auto w = static_cast<uint64_t>(std::bit_width(c));
      auto& b = bins[c <= 1024 ? c : (w << 32) | ((c >> (w - 8)) & 0x7f)];
      b.first += 1.0;
      b.second += static_cast<double>(c);
    });
    for (const auto& [bin, b] : bins)
      e->count_rows.emplace_back(static_cast<uint64_t>(std::llround(b.second / b.first)), static_cast<uint64_t>(b.first));
    std::sort(e->count_rows.begin(), e->count_rows.end(), std::greater<>());
  }
  // Stack distances of the interleaved sample, in sample rows, by class.
  {
    detail::RowIds ids;               // row -> dense id for the stack (open addressing)
    std::vector<uint8_t> class_of_id;  // each sampled row's class, looked up once
    detail::MattsonStack stack;
    for_each_interleaved(samples, threshold, [&](uint32_t, const OrderedRef& r) {
      const uint64_t id = ids.id_of(r.row);
      if (id == class_of_id.size())
        class_of_id.push_back(e->stratified ? static_cast<uint8_t>(std::bit_width(merged.count(r.row))) : 0);
      const uint64_t dist = stack.reference(id);
      e->d[class_of_id[id]].push_back(dist == detail::MattsonStack::kCold ? UINT64_MAX : dist);
      ++u.sampled_refs;
    });
  }
  if (u.sampled_refs == 0) return unavailable("the ranks' ordered samples hold no references");
  if (!e->stratified) e->adjust = e->expected - static_cast<double>(u.sampled_refs);  // 0 at rate 1
  for (auto& v : e->d) std::sort(v.begin(), v.end());
  u.estimator = std::move(e);
  u.available = true;
  const uint64_t rows = merged.rows();
  for (uint64_t c : lru_cache_sizes(rows)) u.curve.push_back({static_cast<double>(c), u.hit_rate(c)});
  auto share = [&](uint64_t num, uint64_t den) { return std::max<uint64_t>(1, rows * num / den); };
  u.hit_rate_1pct = u.hit_rate(share(1, 100));
  u.hit_rate_10pct = u.hit_rate(share(10, 100));
  u.hit_rate_50pct = u.hit_rate(share(50, 100));
  u.hit_rate_100pct = u.hit_rate(rows);
  return u;
}

}  // namespace edo::stats
