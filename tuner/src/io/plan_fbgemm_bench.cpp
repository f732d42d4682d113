// The job's access pattern for FBGEMM's TBE benchmarks (issue 34 point 4): per table, the
// fields of TBEDataConfig (fbgemm_gpu/tbe/bench/tbe_data_config.py, fbgemm-gpu 1.9.0) with
// BatchParams, PoolingParams and IndicesParams (tbe_data_config_param_models.py), so that
// TBEDataConfig.from_json(json.dumps(table["config"])) builds the benchmark of this table.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "edo/model/profile_summary.h"
#include "edo/tuner/fbgemm_bench.h"
#include "edo/tuner/torchrec_facts.h"

namespace edo::tuner {
namespace {

// sum_{i=0}^{n-1} (a + i)^-s for a >= 1: the first terms summed, the rest by Euler-Maclaurin
// (integral, end-point halves, and the B2, B4, B6 terms; error far below the 1e-6 the fit's
// likelihood differences need). FBGEMM takes the same sum as a difference of Hurwitz zetas
// (getZipfianConstant, fbgemm_gpu/src/tbe/eeg/eeg_utils.cpp).
double zipf_partial_sum(double s, double a, int64_t n) {
  constexpr int64_t kDirect = 16;
  double sum = 0;
  const int64_t head = std::min(n, kDirect);
  for (int64_t i = 0; i < head; ++i) sum += std::pow(a + static_cast<double>(i), -s);
  if (n <= kDirect) return sum;
  const double lo = a + static_cast<double>(kDirect), hi = a + static_cast<double>(n - 1);
  if (hi <= lo) return sum + std::pow(hi, -s);
  const double integral = std::abs(s - 1.0) < 1e-12 ? std::log(hi / lo) : (std::pow(hi, 1 - s) - std::pow(lo, 1 - s)) / (1 - s);
  auto deriv = [s](double x, int order) {  // d^order/dx^order x^-s
    double c = 1;
    for (int k = 0; k < order; ++k) c *= -(s + k);
    return c * std::pow(x, -s - order);
  };
  sum += integral + (std::pow(lo, -s) + std::pow(hi, -s)) / 2;
  sum += (1.0 / 12) * (deriv(hi, 1) - deriv(lo, 1));
  sum += (-1.0 / 720) * (deriv(hi, 3) - deriv(lo, 3));
  sum += (1.0 / 30240) * (deriv(hi, 5) - deriv(lo, 5));
  return sum;
}

}  // namespace

IndicesDistribution estimate_indices_distribution(const std::vector<uint64_t>& counts) {
  IndicesDistribution out;
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0, [](double a, uint64_t c) { return a + static_cast<double>(c); });
  if (counts.empty() || !(total > 0)) return out;
  std::vector<double> freqs(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) freqs[i] = static_cast<double>(counts[i]) / total;
  std::sort(freqs.begin(), freqs.end(), std::greater<>());
  // IndicesEstimator::heavyHitters: at most kHeavyHitterMaxEntries_ = 20, until the cumulative
  // share passes kHeavyHitterThreshold_ = 0.90 (indices_estimator.h).
  double cdf = 0;
  for (size_t i = 0; i < std::min<size_t>(20, freqs.size()); ++i) {
    out.heavy_hitters.push_back(freqs[i]);
    cdf += freqs[i];
    if (cdf > 0.90) break;
  }
  // IndicesEstimator::zipfParams: q from 1 below kMaxQ = 100000 in steps of 10^floor(log10 q) / 4,
  // s from 0.01 below 2.0 in steps of 0.01 (accumulated, as there); a pair is kept only when the
  // smallest heavy hitter is 1 to 5 times the Zipf part's largest probability; the log-likelihood
  // is -Z log C(s, q) + s * sum_k f_k * -log(...) - 0.0001 q. Its log table holds log(1 + i / 8)
  // and is read at lrint((start + q) * 8 - 1) + 8 (k - start): log(k + q + 7/8) for rank k.
  const size_t start = out.heavy_hitters.size();
  const int64_t rest = static_cast<int64_t>(freqs.size() - start);
  const double zipf_total = std::accumulate(freqs.begin() + static_cast<std::ptrdiff_t>(start), freqs.end(), 0.0);
  const double min_hitter = out.heavy_hitters.back();
  double best = -std::numeric_limits<double>::infinity();
  double q_step = 1.0;
  for (double q = 1.0; q < 100000; q += q_step) {
    double freq_term = 0;
    const auto first = static_cast<double>(std::lrint((static_cast<double>(start) + q) * 8 - 1));
    for (int64_t k = 0; k < rest; ++k) freq_term -= freqs[start + static_cast<size_t>(k)] * std::log(1.0 + (first + 8.0 * static_cast<double>(k)) / 8.0);
    for (double s = 0.01; s < 2.0; s += 0.01) {
      const double c = zipf_partial_sum(s, q + static_cast<double>(start), rest);
      const double zipf_max = zipf_total / c * std::pow(q + static_cast<double>(start), -s);
      const double ratio = min_hitter / zipf_max;
      if (ratio < 1.0 || ratio > 5.0) continue;  // NaN (no Zipf part) passes, as there: its likelihood is NaN, never kept
      const double ll = -zipf_total * std::log(c) + s * freq_term - 0.0001 * q;
      if (ll > best) {
        best = ll;
        out.zipf_q = q;
        out.zipf_s = s;
      }
    }
    q_step = std::pow(10.0, std::floor(std::log10(q))) / 4;
  }
  return out;
}

nlohmann::ordered_json fbgemm_bench_json(const model::Profile& profile) {
  using nlohmann::ordered_json;
  const auto facts = torchrec_facts(profile);
  const uint64_t steps = recorded_steps(profile);
  ordered_json tables = ordered_json::object();
  for (const auto& v : model::table_views(profile)) {
    if (v.rows == 0 || v.dim == 0) continue;
    const auto f = facts.find(v.table_name);
    std::vector<std::string> features{v.table_name};
    std::vector<uint64_t> ids{v.summary.lookups}, bags{0};
    bool per_feature = false;
    if (f != facts.end() && !f->second.features.empty()) {
      features = f->second.features;
      if (!f->second.feature_bags.empty()) {
        ids = f->second.feature_lookups;
        bags = f->second.feature_bags;
        per_feature = true;
      } else {
        // The table's average over its features.
        ids.assign(features.size(), v.summary.lookups / features.size());
        bags.assign(features.size(), f->second.bags / features.size());
      }
    }
    const size_t t = features.size();
    const double per = steps > 0 ? static_cast<double>(steps) : 1.0;
    std::vector<int64_t> bs(t);
    std::vector<double> ls(t);
    double lookups_sum = 0, bags_sum = 0;
    for (size_t i = 0; i < t; ++i) {
      bs[i] = std::max<int64_t>(1, std::llround(static_cast<double>(bags[i]) / per));
      ls[i] = bags[i] > 0 ? static_cast<double>(ids[i]) / static_cast<double>(bags[i]) : 1.0;
      lookups_sum += static_cast<double>(ids[i]);
      bags_sum += static_cast<double>(bags[i]);
    }
    // Without bags (not a TorchRec collection, or an EmbeddingCollection) the batch and pooling
    // are unknown: B is the lookups a step and L 1, which keeps B x L the lookups a step.
    const bool have_bags = bags_sum > 0;
    const int64_t b = have_bags ? std::max<int64_t>(1, std::llround(std::accumulate(bs.begin(), bs.end(), 0.0) / static_cast<double>(t)))
                                : std::max<int64_t>(1, std::llround(static_cast<double>(v.summary.lookups) / per / static_cast<double>(t)));
    const int64_t l = have_bags ? std::max<int64_t>(1, std::llround(lookups_sum / bags_sum)) : 1;
    const IndicesDistribution d = estimate_indices_distribution(v.aggregate.counts_descending());
    ordered_json config{
        {"T", t},
        {"E", v.rows},
        {"D", v.dim},
        {"mixed_dim", false},
        {"weighted", false},
        {"batch_params", {{"B", b}, {"sigma_B", nullptr}, {"vbe_distribution", "normal"}, {"vbe_num_ranks", nullptr},
                          {"Bs", have_bags ? ordered_json(bs) : ordered_json(nullptr)}}},
        {"indices_params", {{"heavy_hitters", d.heavy_hitters}, {"zipf_q", d.zipf_q}, {"zipf_s", d.zipf_s},
                            {"index_dtype", "torch.int64"}, {"offset_dtype", "torch.int64"}}},
        {"pooling_params", {{"L", l}, {"sigma_L", nullptr}, {"length_distribution", "normal"},
                            {"Ls", have_bags ? ordered_json(ls) : ordered_json(nullptr)}}},
        {"use_cpu", false},
        {"Es", nullptr},
        {"Ds", nullptr},
        {"max_indices", v.rows - 1},
        {"embedding_specs", ordered_json::array({ordered_json::array({v.rows, v.dim})})},
        {"feature_table_map", std::vector<int>(t, 0)},
        {"indices_params_list", nullptr},
    };
    ordered_json edo{
        {"features", features},
        {"lookups", v.summary.lookups},
        {"steps", steps},
        {"per_feature", per_feature},
        {"bags_recorded", have_bags},
        {"counts", v.aggregate.mode() == stats::CountMode::kExact ? "exact" : "top-k sketch (the tail is not recorded)"},
        {"distinct_rows", v.aggregate.unique_rows()},
        {"dtype", v.dtype},
    };
    tables[v.name] = ordered_json{{"config", std::move(config)}, {"edo", std::move(edo)}};
  }
  return ordered_json{{"schema", "edo.fbgemm-bench/1"}, {"steps", steps}, {"tables", std::move(tables)}};
}

}  // namespace edo::tuner
