// Statistics of an IID lookup stream generated directly (edo/stats/iid_workload.h).
#include "edo/stats/iid_workload.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <unordered_set>

#include "internal.h"

namespace edo::stats {

namespace {

// splitmix64: the random numbers of every draw here.
struct SplitMix {
  using result_type = uint64_t;
  uint64_t state;
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return UINT64_MAX; }
  uint64_t operator()() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>((*this)()) * n) >> 64); }
};

// log(k!) minus its Stirling approximation (k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2.
double stirling_tail(double k) {
  static const auto table = [] {
    std::array<double, 10> t{};
    for (int i = 0; i < 10; ++i)
      t[static_cast<size_t>(i)] = std::lgamma(i + 1.0) - ((i + 0.5) * std::log(i + 1.0) - (i + 1.0) + 0.5 * std::log(2 * M_PI));
    return t;
  }();
  if (k <= 9) return table[static_cast<size_t>(k)];
  const double kp1sq = (k + 1) * (k + 1);
  return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1);
}

// A Binomial(n, p) draw, exact: by waiting times (one logarithm per success) when n p < 10,
// else Hoermann's BTRS ("The generation of binomial random variates", 1993: transformed
// rejection with a squeeze that accepts most draws with no logarithm). ~10x cheaper than
// std::binomial_distribution, which sets up lgamma terms on every call with new parameters.
uint64_t binomial(uint64_t n, double p, SplitMix& rng);
}  // namespace

uint64_t binomial_draw(uint64_t n, double p, uint64_t& state) {
  SplitMix rng{state};
  const uint64_t k = binomial(n, p, rng);
  state = rng.state;
  return k;
}

namespace {
uint64_t binomial(uint64_t n, double p, SplitMix& rng) {
  if (n == 0 || p <= 0) return 0;
  if (p >= 1) return n;
  if (p > 0.5) return n - binomial(n, 1 - p, rng);
  auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; };  // in (0, 1)
  const double nd = static_cast<double>(n);
  if (nd * p < 10) {
    const double log_q = std::log1p(-p);
    uint64_t successes = 0;
    double trials = 0;
    for (;;) {
      trials += std::ceil(std::log(uniform()) / log_q);  // trials up to the next success
      if (trials > nd) return successes;
      ++successes;
    }
  }
  const double spq = std::sqrt(nd * p * (1 - p));
  const double b = 1.15 + 2.53 * spq;
  const double a = -0.0873 + 0.0248 * b + 0.01 * p;
  const double c = nd * p + 0.5;
  const double v_r = 0.92 - 4.2 / b;
  const double r = p / (1 - p);
  const double alpha = (2.83 + 5.1 / b) * spq;
  const double m = std::floor((nd + 1) * p);
  for (;;) {
    const double u = uniform() - 0.5;
    double v = uniform();
    const double us = 0.5 - std::fabs(u);
    const double k = std::floor((2 * a / us + b) * u + c);
    if (k < 0 || k > nd) continue;
    if (us >= 0.07 && v <= v_r) return static_cast<uint64_t>(k);
    v = std::log(v * alpha / (a / (us * us) + b));
    const double bound = (m + 0.5) * std::log((m + 1) / (r * (nd - m + 1))) + (nd + 1) * std::log((nd - m + 1) / (nd - k + 1)) +
                         (k + 0.5) * std::log(r * (nd - k + 1) / (k + 1)) + stirling_tail(m) + stirling_tail(nd - m) -
                         stirling_tail(k) - stirling_tail(nd - k);
    if (v <= bound) return static_cast<uint64_t>(k);
  }
}

// Counts of n IID draws over probs (a multinomial) into out: a chain of binomials, each
// index's count given the draws left and its share of the probability left.
void multinomial(uint64_t n, const std::vector<double>& probs, const std::vector<double>& rest, SplitMix& rng,
                 uint64_t* out) {
  const size_t k = probs.size();
  for (size_t i = 0; i < k; ++i) {
    if (n == 0) {
      out[i] = 0;
      continue;
    }
    if (i + 1 == k) {
      out[i] = n;
      n = 0;
      continue;
    }
    const double q = rest[i] > 0 ? std::clamp(probs[i] / rest[i], 0.0, 1.0) : 1.0;
    uint64_t c = n;
    if (q < 1.0) c = binomial(n, q, rng);
    out[i] = c;
    n -= c;
  }
}

// `n` distinct positions of [0, m), uniformly at random, ascending (Floyd's algorithm).
std::vector<uint64_t> random_positions(uint64_t n, uint64_t m, SplitMix& rng) {
  std::vector<uint64_t> out;
  out.reserve(n);
  if (m <= (uint64_t{1} << 27)) {  // a bitmap of m bits, read back in order (and cleared)
    // Kept per thread: a fresh one would be fresh pages from the system for every window.
    thread_local std::vector<uint64_t> bits;
    if (bits.size() < (m + 63) / 64) bits.assign((m + 63) / 64, 0);
    for (uint64_t j = m - n; j < m; ++j) {
      uint64_t t = rng.below(j + 1);
      if (bits[t >> 6] >> (t & 63) & 1) t = j;
      bits[t >> 6] |= uint64_t{1} << (t & 63);
    }
    for (size_t w = 0; w < (m + 63) / 64; ++w) {
      for (uint64_t b = bits[w]; b; b &= b - 1) out.push_back(w * 64 + static_cast<uint64_t>(__builtin_ctzll(b)));
      bits[w] = 0;
    }
    return out;
  }
  std::unordered_set<uint64_t> seen;
  seen.reserve(n);
  for (uint64_t j = m - n; j < m; ++j) {
    const uint64_t t = rng.below(j + 1);
    out.push_back(seen.insert(t).second ? t : j);
    seen.insert(j);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The ordered sampler's final threshold for these total counts: the highest one at which
// the whole stream's sampled references fit in max_refs (OrderedSampler ends at the same one,
// as the references it keeps at a level only grow).
uint64_t sample_threshold(const std::vector<uint64_t>& row_ids, const std::vector<uint64_t>& totals, uint64_t max_refs) {
  std::vector<uint64_t> by_level(hash::kSampleModBits + 2, 0);
  uint64_t kept = 0;
  for (size_t k = 0; k < row_ids.size(); ++k) {
    if (!totals[k]) continue;
    const uint64_t h = hash::sample_hash(row_ids[k]) & hash::kSampleMask;
    by_level[hash::kSampleModBits - static_cast<uint32_t>(std::bit_width(h))] += totals[k];
    kept += totals[k];
  }
  uint32_t level = 0;
  while (kept > max_refs && level <= hash::kSampleModBits) kept -= by_level[level++];
  return level > hash::kSampleModBits ? 0 : OrderedSample::kFullThreshold >> level;
}

// Exact stack distances of drawn lookups (alias table indices serve as the stack's ids: ids
// only name the rows). Two sequences of len / 2 lookups each:
//  * `start`: from an empty stack, as the stream starts (first reads are cold, and a reuse can
//    be no longer than the time since the start): the stream's own first len / 2 lookups, in
//    distribution;
//  * `steady`: from a stack in its stationary order, the state of a stream that has run long:
//    under independent lookups the rows ordered by their last read are the rows ordered by
//    independent Exp(p) ages (the Poisson view of the same sequence), so sorting the rows by
//    -log(U) / p, oldest first, into the stack is an exact draw of that state. Every lookup is
//    then a hit, and its distance has the distribution of the later lookups' distances.
//    Post-stratified: the distances are tallied per class of rows (indices 2^c - 1 .. 2^(c+1) - 2,
//    the likeliest first), and each class is weighted by its probability instead of its share of
//    the drawn lookups, which removes the noise of how often the hot rows happened to be drawn.
struct DrawnDistances {
  detail::DistanceTally start;
  std::vector<detail::DistanceTally> steady;  // per class
  std::vector<double> class_prob;             // probability of each class
};
uint32_t class_of(uint64_t index) { return static_cast<uint32_t>(std::bit_width(index + 1)) - 1; }

DrawnDistances drawn_distances(const AliasTable& alias, const std::vector<double>& probs, uint64_t len, SplitMix& rng) {
  DrawnDistances out;
  std::vector<uint64_t> buf(4096);
  {
    detail::MattsonStack stack;
    stack.set_id_bound(alias.size());
    out.start.reserve_below(alias.size());
    for (uint64_t done = 0; done < len / 2;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), len / 2 - done));
      for (size_t i = 0; i < n; ++i) buf[i] = alias.draw(rng());
      stack.reference_batch(buf.data(), n, out.start);
      done += n;
    }
  }
  const uint32_t classes = probs.empty() ? 0 : class_of(probs.size() - 1) + 1;
  out.steady.resize(classes);
  out.class_prob.assign(classes, 0.0);
  for (size_t k = 0; k < probs.size(); ++k) out.class_prob[class_of(k)] += probs[k];
  detail::MattsonStack stack;
  stack.set_id_bound(alias.size());
  std::vector<std::pair<double, uint64_t>> age;  // (age, index), oldest first into the stack
  for (size_t k = 0; k < probs.size(); ++k) {
    if (probs[k] <= 0) continue;
    const double u = (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
    age.emplace_back(-std::log(u) / probs[k], k);
  }
  std::sort(age.begin(), age.end(), std::greater<>());
  for (const auto& [a, k] : age) stack.reference(k);
  for (auto& t : out.steady) t.reserve_below(alias.size());
  for (uint64_t i = len / 2; i < len; ++i) {
    const uint32_t k = alias.draw(rng());
    const uint64_t d = stack.reference(k);
    if (d != detail::MattsonStack::kCold) out.steady[class_of(k)].add(d);
  }
  return out;
}

// The stream's histogram: `start`'s hits as they are (its first lookups), the rest of the
// `lookups - distinct` hits split over the bins in the proportions of the weighted classes of
// `steady` (largest remainders, so that the bins are whole numbers adding up to the hits), and
// `distinct` first reads.
void stream_histogram(const DrawnDistances& d, uint64_t lookups, uint64_t distinct, StackDistanceHistogram& out) {
  out.clear();
  if (distinct) out.add_cold(static_cast<double>(distinct));
  const uint64_t all_hits = lookups - distinct;
  // The start's hits as they are, unless the stream is shorter than it (not when
  // iid_aggregate_applies()): then every hit follows `steady`.
  const bool with_start = d.start.hits <= all_hits;
  const uint64_t hits = all_hits - (with_start ? d.start.hits : 0);
  size_t nbins = std::max<size_t>(1, d.start.bins.size());
  uint64_t max_distance = d.start.max_distance;
  for (const auto& t : d.steady) {
    nbins = std::max(nbins, t.bins.size());
    max_distance = std::max(max_distance, t.max_distance);
  }
  // A class without drawn lookups (a cold class of a steep Zipf) lends its probability to the
  // nearest likelier class that has some.
  std::vector<double> weight(d.steady.size(), 0.0);
  double lent = 0, total_weight = 0;
  for (size_t c = d.steady.size(); c-- > 0;) {
    lent += d.class_prob[c];
    if (!d.steady[c].hits) continue;
    weight[c] = lent / static_cast<double>(d.steady[c].hits);
    total_weight += lent;
    lent = 0;
  }
  std::vector<long double> share(nbins, 0.0L);
  for (size_t c = 0; c < d.steady.size(); ++c)
    for (size_t b = 0; b < d.steady[c].bins.size(); ++b) share[b] += static_cast<long double>(weight[c]) * d.steady[c].bins[b];
  std::vector<uint64_t> whole(nbins, 0);
  if (hits > 0 && total_weight > 0) {
    std::vector<std::pair<double, size_t>> frac;
    uint64_t given = 0;
    for (size_t b = 0; b < nbins; ++b) {
      if (share[b] <= 0) continue;
      const long double exact = std::min<long double>(hits, hits * share[b] / total_weight);
      whole[b] = static_cast<uint64_t>(exact);
      given += whole[b];
      frac.emplace_back(static_cast<double>(exact - whole[b]), b);
    }
    std::sort(frac.begin(), frac.end(), [](const auto& x, const auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
    for (size_t i = 0; given < hits; i = (i + 1) % frac.size(), ++given) ++whole[frac[i].second];
    // Rounding can leave the sum one over: take it from the largest bin.
    for (; given > hits; --given) --*std::max_element(whole.begin(), whole.end());
  } else if (hits > 0) {
    whole[0] += hits;  // nothing measured: cannot happen (every steady lookup is a hit)
  }
  if (with_start)
    for (size_t b = 0; b < d.start.bins.size(); ++b) whole[b] += d.start.bins[b];
  for (size_t b = 0; b < whole.size(); ++b)
    if (whole[b]) out.add(StackDistanceHistogram::bin_lower(static_cast<uint32_t>(b)), static_cast<double>(whole[b]));
  // The largest distance measured (added last, as DistanceTally::add_to does).
  if (all_hits) out.add(max_distance, 0.0);
}

// A window's hot set: its drift_top_k most-read rows (ties: lower row first), ascending.
HotSetWindow hot_set(uint64_t index, uint64_t lookups, std::vector<std::pair<uint64_t, uint64_t>> counts, uint32_t top_k) {
  auto desc = [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; };
  const size_t k = std::min<size_t>(top_k, counts.size());
  // Which rows, not their order (they are listed by row): a selection, not a sort.
  if (k < counts.size()) std::nth_element(counts.begin(), counts.begin() + static_cast<ptrdiff_t>(k), counts.end(), desc);
  HotSetWindow w;
  w.window_index = index;
  w.lookups = lookups;
  for (size_t i = 0; i < k; ++i) w.rows.push_back(counts[i].first);
  std::sort(w.rows.begin(), w.rows.end());
  return w;
}

}  // namespace

AliasTable::AliasTable(const std::vector<double>& probs) : n_(probs.size()), keep_(probs.size()), alias_(probs.size()) {
  // Vose's construction on probabilities scaled to a mean of 1.
  double sum = 0;
  for (double p : probs) sum += p;
  std::vector<double> scaled(n_);
  std::vector<uint32_t> small, large;
  for (size_t k = 0; k < n_; ++k) {
    scaled[k] = probs[k] * static_cast<double>(n_) / sum;
    (scaled[k] < 1.0 ? small : large).push_back(static_cast<uint32_t>(k));
  }
  auto keep_of = [](double s) { return static_cast<uint32_t>(std::min(4294967295.0, std::floor(s * 4294967296.0))); };
  while (!small.empty() && !large.empty()) {
    const uint32_t s = small.back(), l = large.back();
    small.pop_back();
    keep_[s] = keep_of(scaled[s]);
    alias_[s] = l;
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // What is left is 1 up to rounding: kept whole.
  for (uint32_t k : small) keep_[k] = UINT32_MAX, alias_[k] = k;
  for (uint32_t k : large) keep_[k] = UINT32_MAX, alias_[k] = k;
}

uint64_t iid_drawn_lookups(uint64_t rows) {
  return std::clamp<uint64_t>(rows * 32, uint64_t{1} << 16, uint64_t{1} << 20);
}

bool iid_aggregate_applies(uint64_t rows, const IidStream& s, const StatsConfig& c) {
  if (rows == 0 || rows > c.exact_rows_limit || rows > c.exact_lru_rows_limit || !c.track_lru) return false;
  if (s.window_lookups == 0 || s.lookups / 64 < rows || s.lookups / 4 < s.drawn_lookups) return false;
  const uint64_t windows = (s.lookups + s.window_lookups - 1) / s.window_lookups;
  // Drawing a window's counts costs ~100 ns a row, streaming ~50 ns a lookup; and the
  // per-window counts are held until the sample threshold is known (8 bytes each).
  return windows <= (uint64_t{1} << 22) / rows && windows * rows <= s.lookups / 16;
}

TableAggregate iid_aggregate(uint64_t rows, const StatsConfig& config, const std::vector<uint64_t>& row_ids,
                             const std::vector<double>& probs, const IidStream& stream, uint64_t seed,
                             const std::function<void(const TableAggregate&, const TableAggregate&)>& on_window) {
  SplitMix rng{seed ^ 0x243f6a8885a308d3ULL};
  const size_t k = row_ids.size();
  std::vector<double> rest(k, 0.0);  // probability of indices k.. (from the tail: no cancellation)
  {
    long double acc = 0;
    for (size_t i = k; i-- > 0;) rest[i] = static_cast<double>(acc += probs[i]);
  }
  // Rows by id, to hand out sparse counts in row order.
  std::vector<uint32_t> by_row(k);
  for (size_t i = 0; i < k; ++i) by_row[i] = static_cast<uint32_t>(i);
  std::sort(by_row.begin(), by_row.end(), [&](uint32_t a, uint32_t b) { return row_ids[a] < row_ids[b]; });

  // Each window's counts: independent multinomials (IID lookups).
  const uint64_t windows = stream.window_lookups ? (stream.lookups + stream.window_lookups - 1) / stream.window_lookups : 0;
  std::vector<uint64_t> counts(windows * k);
  std::vector<uint64_t> totals(k, 0);
  for (uint64_t w = 0; w < windows; ++w) {
    const uint64_t m = std::min(stream.window_lookups, stream.lookups - w * stream.window_lookups);
    uint64_t* c = counts.data() + w * k;
    multinomial(m, probs, rest, rng, c);
    for (size_t i = 0; i < k; ++i) totals[i] += c[i];
  }

  TableAggregate total(rows, config);
  std::vector<HotSetWindow> hot_sets;
  for (uint64_t w = 0; w < windows; ++w) {
    const uint64_t m = std::min(stream.window_lookups, stream.lookups - w * stream.window_lookups);
    const uint64_t* c = counts.data() + w * k;
    TableAggregate window(rows, config);
    auto& a = window.impl();
    for (uint32_t i : by_row)
      if (c[i]) a.exact.sparse().emplace_back(row_ids[i], c[i]);
    a.lookups = m;
    hot_sets.push_back(hot_set(w, m, a.exact.sparse(), config.drift_top_k));
    if (on_window) on_window(total, window);
    total.merge(window);
  }
  auto& t = total.impl();
  t.append_windows(hot_sets);

  // The stack distances: every row's first reference is cold, the other references hits.
  uint64_t distinct = 0;
  for (uint64_t n : totals) distinct += n > 0;
  if (config.track_lru) {
    const AliasTable alias(probs);
    stream_histogram(drawn_distances(alias, probs, stream.drawn_lookups, rng), stream.lookups, distinct, t.hist);
  }

  // The ordered sample: the sampled rows' references of each window at random distinct
  // positions of it, in random order.
  if (config.track_lru && config.ordered_sample_refs > 0) {
    OrderedSample s;
    s.threshold = sample_threshold(row_ids, totals, config.ordered_sample_refs);
    s.begin = 0;
    s.end = stream.lookups;
    std::vector<uint32_t> kept;
    for (uint32_t i : by_row)
      if (totals[i] && OrderedSample::keeps(row_ids[i], s.threshold)) kept.push_back(i);
    uint64_t sampled = 0;
    for (uint32_t i : kept) sampled += totals[i];
    s.refs.reserve(sampled);
    std::vector<uint64_t> refs_rows;
    for (uint64_t w = 0; w < windows; ++w) {
      const uint64_t m = std::min(stream.window_lookups, stream.lookups - w * stream.window_lookups);
      const uint64_t* c = counts.data() + w * k;
      refs_rows.clear();
      for (uint32_t i : kept) refs_rows.insert(refs_rows.end(), c[i], row_ids[i]);
      for (size_t j = refs_rows.size(); j > 1; --j) std::swap(refs_rows[j - 1], refs_rows[rng.below(j)]);
      const std::vector<uint64_t> pos = random_positions(refs_rows.size(), m, rng);
      for (size_t j = 0; j < pos.size(); ++j) s.refs.push_back({w * stream.window_lookups + pos[j], refs_rows[j]});
    }
    t.sample = std::move(s);
    t.has_sample = true;
  }
  return total;
}

}  // namespace edo::stats
