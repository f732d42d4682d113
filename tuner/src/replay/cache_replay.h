// Held-out cache hit rates from the recorded order (issue 19 points 1 and 6): the table's
// ordered sample (edo/stats/ordered_sample.h) is cut at kFitFraction of its lookups; cache
// sizes and the static hot set are fitted on the references before the cut, and the hit rates
// are those of the references after it, replayed through an LRU of that size (warm from the
// earlier part) or against that hot set.
//
// A sample of rate r < 1 stands for the whole stream as in SHARDS (Waldspurger et al., FAST
// '15): an LRU of k rows is an LRU of k * r slots on the sampled rows, a hot set of k rows is
// the k * r most-read sampled rows. With exact counts the rates are post-stratified by the
// rows' recorded counts (classes of equal floor(log2 count)): each class's sampled hit rate
// weighs what the class holds of the recording's lookups, so that the hottest rows, which a
// bounded sample holds rarely or never (one of them alone can exceed the bound), count with
// their true weight. A class hotter than every class the sample holds is estimated from its
// counts under the independent reference model (LRU: Che's approximation, Che, Tung and Wang,
// IEEE JSAC 2002; static: in the hot set when among the k most read rows of the recording);
// any other class the sample missed takes the rate of the nearest class it holds.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "edo/stats/table_stats.h"

namespace edo::tuner {

class CacheReplay {
 public:
  // The share of the table's lookups a cache is fitted on (the rest scores it).
  static constexpr double kFitFraction = 0.7;

  // The replay of `counts`' ordered sample, or nullopt with `why_not` saying why there is none
  // (said in the plan beside the estimate used instead).
  static std::optional<CacheReplay> of(const stats::TableAggregate& counts, std::string& why_not,
                                       double fit_fraction = kFitFraction);

  // Cache sizes (rows) fitted on the earlier part: the smallest sizes whose LRU hit rate there
  // reaches 50, 80, 90, 95 and 99 % (at the sample's own stack distances, never between
  // them), below `rows`, sizes within 5 % of each other merged.
  std::vector<uint64_t> fitted_cache_rows(uint64_t rows) const;
  // The knee of the earlier part's LRU curve (issue 34 point 3): the size past which an extra
  // cache row adds fewer hits than the table's average row does, i.e. the size k < `rows` that
  // maximises h(k) / h(rows) - k / rows (the "Kneedle" point, Satopaa et al., ICDCS-W 2011, on
  // the curve scaled to the unit square), searched on 256 log-spaced sizes and moved down to the
  // smallest size with the same hits. 0 when the curve has no hits or no knee below `rows`.
  // Whatever hit rate that is (a table whose curve never reaches 50 % still has one).
  uint64_t knee_cache_rows(uint64_t rows) const;
  // Held-out hit rate of an LRU of `cache_rows` rows (warm from the earlier part).
  double lru_hit_rate(uint64_t cache_rows) const;
  // Held-out hit rate of the static hot set of `cache_rows` rows, the most read in the
  // earlier part (ties: lower row first).
  double static_hit_rate(uint64_t cache_rows) const;
  // The LRU's hit rate on the earlier part (what the fit saw).
  double fit_lru_hit_rate(uint64_t cache_rows) const;

  double rate() const { return rate_; }
  bool stratified() const { return stratified_; }
  uint64_t split() const { return split_; }  // first held-out position
  uint64_t held_out_refs() const { return held_refs_; }
  uint64_t fit_refs() const { return fit_refs_; }

 private:
  static constexpr size_t kClasses = 65;  // floor(log2 count) + 1; 0: no count known
  // Per class: stack distances of the sampled references (UINT64_MAX: a row's first), sorted.
  struct Part {
    std::array<std::vector<uint64_t>, kClasses> d;
    std::array<double, kClasses> weight{};  // the class's share of this part's lookups
  };
  using Rates = std::array<double, kClasses>;
  // Each class's share of each part's lookups (of()): 1 for the single class of an unstratified
  // replay; else the recording's lookups of the class split between the parts as its sampled
  // references are, with the recorded counts binned for Che's approximation (count_rows_).
  void weigh_classes(const stats::TableAggregate& counts, const stats::OrderedSample& s);
  // Per class a rate (-1: no rows), and the rows of those classes the cache holds.
  struct Model {
    Rates rate{};
    double rows_held = 0;
  };
  // Weighted over classes: sum_c weight_c * rate_c. A class without references takes
  // `model`'s rate when it is hotter than every class with some, else the rate of the
  // nearest class with some (hotter first).
  static double combine(const Rates& weight, const Rates& rate, const std::array<bool, kClasses>& known, const Rates* model);
  static size_t hottest_known(const std::array<bool, kClasses>& known);
  static bool needs_model(const Rates& weight, const std::array<bool, kClasses>& known);
  // LRU hit rate of a part for a cache of `cache_rows` rows.
  double lru_rate(const Part& p, double cache_rows) const;
  // The independent-reference estimates of the classes above `above` (stratified only).
  Model che_lru(double k, size_t above) const;
  Model top_k(double k, size_t above) const;

  double rate_ = 1.0;
  bool stratified_ = false;
  uint64_t split_ = 0;
  uint64_t fit_refs_ = 0, held_refs_ = 0;
  Part fit_, held_;
  // Sampled rows read before the cut, most read there first (ties: lower row first): their
  // class and their references after the cut.
  std::vector<std::pair<uint32_t, uint64_t>> hot_held_;
  // Stratified: the recording's counts as (count, rows with that count), most read first,
  // and their sum.
  std::vector<std::pair<uint64_t, uint64_t>> count_rows_;
  double lookups_ = 0;
};

}  // namespace edo::tuner
