#include "measure.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "edo/dtype.h"
#include "edo/kernels/encode.h"
#include "edo/kernels/lru.h"
#include "edo/kernels/formats/bf16.h"
#include "edo/kernels/formats/fp16.h"
#include "edo/kernels/workload.h"

namespace edo::tuner {

AccessModel access_model(const stats::TableAggregate& counts, uint64_t rows, size_t max_hot) {
  AccessModel m;
  m.rows = rows;
  double hot = 0;
  for (const auto& [row, c] : counts.top_rows(max_hot)) {
    if (c == 0 || row >= rows) continue;
    m.hot_rows.push_back(row);
    m.hot_counts.push_back(static_cast<double>(c));
    hot += static_cast<double>(c);
  }
  m.tail_lookups = std::max(0.0, static_cast<double>(counts.lookups()) - hot);
  const uint64_t unique = std::min<uint64_t>(counts.unique_rows(), rows);
  m.tail_rows = unique > m.hot_rows.size() ? unique - m.hot_rows.size() : 0;
  if (m.tail_lookups >= 1 && m.tail_rows == 0) m.tail_rows = rows - m.hot_rows.size();  // estimates disagree
  if (m.tail_rows == 0) m.tail_lookups = 0;
  return m;
}

uint64_t measured_rows(uint64_t rows, uint32_t dim, uint64_t cap_bytes) {
  const double fp32 = static_cast<double>(rows) * dim * 4.0;
  if (fp32 <= static_cast<double>(cap_bytes)) return rows;
  const uint64_t fit = cap_bytes / (uint64_t{4} * std::max<uint32_t>(dim, 1));
  return std::max(fit, std::min<uint64_t>(rows, uint64_t{1} << 18));
}

kernels::StrategySpec measured_spec(const Candidate& c, uint64_t rows, uint64_t measured) {
  if (measured == rows) return c.kernel;
  kernels::StrategySpec s = c.kernel;
  char buf[48];
  if (s.name == "offload") {
    const uint64_t k = std::min(c.cache_rows, measured);
    std::snprintf(buf, sizeof buf, "%.17g", k >= measured ? 1.0 : (static_cast<double>(k) + 0.5) / static_cast<double>(measured));
    s.params["cache"] = buf;
  } else if (s.name == "multihash" && s.params.count("buckets")) {
    const double b = std::stod(s.params["buckets"]) * static_cast<double>(measured) / static_cast<double>(rows);
    s.params["buckets"] = std::to_string(std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(b))));
  }
  return s;
}

double weighted_error(const kernels::EncodedTable& table, const ReferenceRows& ref) {
  const uint32_t D = table.dim();
  std::vector<float> row(D);
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.positions.size(); ++i) {
    const double w = ref.weights[i];
    if (w <= 0) continue;
    table.decode_rows(ref.positions[i], 1, row.data());
    const float* x = &ref.values[i * D];
    double e = 0, s = 0;
    for (uint32_t d = 0; d < D; ++d) {
      const double diff = static_cast<double>(x[d]) - row[d];
      e += diff * diff;
      s += static_cast<double>(x[d]) * x[d];
    }
    num += w * e;
    den += w * s;
  }
  if (den == 0) return num == 0 ? 0.0 : INFINITY;
  return std::sqrt(num / den);
}

std::vector<float> snapshot_fp32(const model::WeightSnapshot& s) {
  const size_t n = s.rows.size() * s.dim;
  std::vector<float> out(n);
  const auto t = parse_dtype(s.dtype);
  for (size_t i = 0; i < n; ++i) {
    if (t == DType::Fp32) {
      std::memcpy(&out[i], s.values.data() + i * 4, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, s.values.data() + i * 2, 2);
      out[i] = t == DType::Fp16 ? kernels::half_to_float(h) : kernels::bf16_to_float(h);
    }
  }
  return out;
}

namespace {

// Walker's alias table over the hot rows plus one "tail" bucket.
struct Alias {
  std::vector<double> prob;
  std::vector<uint32_t> alias;
  explicit Alias(const std::vector<double>& w) : prob(w.size()), alias(w.size()) {
    const size_t n = w.size();
    double total = 0;
    for (double x : w) total += x;
    std::vector<double> scaled(n);
    std::vector<uint32_t> small, large;
    for (size_t i = 0; i < n; ++i) {
      scaled[i] = w[i] * static_cast<double>(n) / total;
      (scaled[i] < 1.0 ? small : large).push_back(static_cast<uint32_t>(i));
    }
    while (!small.empty() && !large.empty()) {
      const uint32_t s = small.back(), l = large.back();
      small.pop_back();
      prob[s] = scaled[s];
      alias[s] = l;
      scaled[l] -= 1.0 - scaled[s];
      if (scaled[l] < 1.0) {
        large.pop_back();
        small.push_back(l);
      }
    }
    for (uint32_t i : small) prob[i] = 1.0;
    for (uint32_t i : large) prob[i] = 1.0;
  }
  uint32_t draw(kernels::Rng& rng) const {
    const auto i = static_cast<uint32_t>(rng.below(prob.size()));
    return rng.uniform() < prob[i] ? i : alias[i];
  }
};

}  // namespace

// Where the recorded counts sit among the measured rows (permuted positions perm[0..)): the
// H hot rows first, then the tail's T positions, each with an even share of the tail's lookups.
struct TableBench::Placement {
  uint64_t H = 0, T = 0;
  double tail_each = 0;
  std::unordered_map<uint64_t, uint64_t> position_of_hot;  // original row -> measured position
};

TableBench::Placement TableBench::place_counts(const AccessModel& m, const std::vector<int64_t>& perm) {
  Placement at;
  at.H = m.hot_rows.size();
  // Tail support: at full size, as many positions as the table had other rows read; scaled,
  // every other position (the tail stays as wide, and as cache-unfriendly, as the measured
  // table allows).
  if (m.tail_rows > 0) at.T = rows_ == g_.rows ? std::min<uint64_t>(m.tail_rows, rows_ - at.H) : rows_ - at.H;
  counts_.assign(rows_, 0);
  at.position_of_hot.reserve(at.H * 2);
  for (uint64_t i = 0; i < at.H; ++i) {
    counts_[perm[i]] = static_cast<uint64_t>(m.hot_counts[i]);
    at.position_of_hot[m.hot_rows[i]] = static_cast<uint64_t>(perm[i]);
  }
  at.tail_each = at.T ? m.tail_lookups / static_cast<double>(at.T) : 0;
  for (uint64_t i = 0; i < at.T; ++i)
    counts_[perm[at.H + i]] = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(at.tail_each)));
  return at;
}

// Index batches drawn from the access model (the hot rows' counts, then the tail's lookups, as
// model_weights_), one step's lookups each (at most --max-batch); the distinct rows per batch
// (what a sparse update touches per step).
void TableBench::draw_batches(const Placement& at, const std::vector<int64_t>& perm, const TuneOptions& o, kernels::Rng& rng) {
  const uint64_t batch =
      std::clamp<uint64_t>(static_cast<uint64_t>(std::llround(g_.lookups_per_step)), 1, std::max<uint64_t>(1, o.max_batch));
  std::vector<std::vector<int64_t>> batches(static_cast<size_t>(std::max(1, o.batches)));
  if (model_weights_.empty()) {
    for (auto& b : batches) {  // never read: uniform rows
      b.resize(batch);
      for (auto& x : b) x = static_cast<int64_t>(rng.below(rows_));
    }
  } else {
    const Alias alias(model_weights_);
    for (auto& b : batches) {
      b.resize(batch);
      for (auto& x : b) {
        const uint32_t k = alias.draw(rng);
        x = k < at.H ? perm[k] : perm[at.H + rng.below(at.T)];
      }
    }
  }
  lookups_per_pass_ = static_cast<double>(batch) * static_cast<double>(batches.size());
  double distinct = 0;
  std::vector<int64_t> sorted;
  for (const auto& b : batches) {
    sorted = b;
    std::sort(sorted.begin(), sorted.end());
    distinct += static_cast<double>(std::unique(sorted.begin(), sorted.end()) - sorted.begin());
  }
  distinct_per_batch_ = distinct / static_cast<double>(batches.size());
  batch_ = batch;
  work_ = kernels::Workload::fixed_bags(std::move(batches), 1);
}

// Recorded weights: filler rows follow the snapshot's per-column mean and spread; the snapshot's
// rows go to their hot position, or to a free position among the read rows (or among the others
// for rows never read), and are the error's reference rows.
void TableBench::place_snapshot(const model::WeightSnapshot& s, const Placement& at, const std::vector<int64_t>& perm) {
  const uint32_t D = g_.dim;
  recorded_ = true;
  const std::vector<float> v = snapshot_fp32(s);
  std::vector<double> mean(D, 0.0), sq(D, 0.0);
  for (size_t i = 0; i < s.rows.size(); ++i)
    for (uint32_t d = 0; d < D; ++d) {
      mean[d] += v[i * D + d];
      sq[d] += static_cast<double>(v[i * D + d]) * v[i * D + d];
    }
  const double n = std::max<double>(1, static_cast<double>(s.rows.size()));
  for (uint64_t r = 0; r < rows_; ++r)
    for (uint32_t d = 0; d < D; ++d) {
      const double mu = mean[d] / n, sd = std::sqrt(std::max(0.0, sq[d] / n - mu * mu));
      weights_[r * D + d] = static_cast<float>(mu + sd * weights_[r * D + d]);
    }
  uint64_t next_read = at.H, next_unread = at.H + at.T;
  std::vector<char> used(rows_, 0);
  for (uint64_t i = 0; i < at.H; ++i) used[perm[i]] = 1;
  auto take = [&](uint64_t& cursor, uint64_t end) -> int64_t {
    while (cursor < end && used[perm[cursor]]) ++cursor;
    return cursor < end ? perm[cursor++] : -1;
  };
  for (size_t i = 0; i < s.rows.size(); ++i) {
    const uint64_t row = s.rows[i];
    const double c = static_cast<double>(g_.counts.count(row));
    int64_t pos;
    if (auto it = at.position_of_hot.find(row); it != at.position_of_hot.end()) pos = static_cast<int64_t>(it->second);
    else if (c > 0) pos = take(next_read, at.H + at.T);
    else pos = take(next_unread, rows_);
    if (pos < 0) pos = take(next_read, rows_);
    if (pos < 0) continue;  // cannot happen while rows_ >= snapshot rows
    used[pos] = 1;
    if (c > 0) counts_[pos] = std::max<uint64_t>(counts_[pos], 1);
    std::memcpy(&weights_[static_cast<uint64_t>(pos) * D], &v[i * D], D * sizeof(float));
    ref_.positions.push_back(static_cast<uint64_t>(pos));
    ref_.values.insert(ref_.values.end(), v.begin() + static_cast<long>(i * D), v.begin() + static_cast<long>((i + 1) * D));
    ref_.weights.push_back(c * s.inclusion_weight(i));
  }
}

// Synthetic weights: the hottest rows exactly, the other read rows through a sample (drawn
// from `rng` after the batches).
void TableBench::sample_synthetic_reference(const AccessModel& m, const Placement& at, const std::vector<int64_t>& perm,
                                            kernels::Rng& rng) {
  const uint32_t D = g_.dim;
  const uint64_t hot_ref = std::min<uint64_t>(at.H, 32768), tail_ref = std::min<uint64_t>(at.T, 32768);
  for (uint64_t i = 0; i < hot_ref; ++i) {
    ref_.positions.push_back(static_cast<uint64_t>(perm[i]));
    ref_.weights.push_back(m.hot_counts[i]);
  }
  for (uint64_t k = 0; k < tail_ref; ++k) {
    ref_.positions.push_back(static_cast<uint64_t>(perm[at.H + rng.below(at.T)]));
    ref_.weights.push_back(at.tail_each * static_cast<double>(at.T) / static_cast<double>(tail_ref));
  }
  for (uint64_t p : ref_.positions) ref_.values.insert(ref_.values.end(), &weights_[p * D], &weights_[p * D] + D);
}

// A table never read (no reference row weighs anything): every row counts the same.
void TableBench::uniform_reference_if_unread(const std::vector<int64_t>& perm) {
  double total = 0;
  for (double x : ref_.weights) total += x;
  if (total > 0) return;
  const uint32_t D = g_.dim;
  ref_ = ReferenceRows{};
  const uint64_t n = std::min<uint64_t>(rows_, 65536);
  for (uint64_t k = 0; k < n; ++k) {
    const uint64_t p = static_cast<uint64_t>(perm[k]);
    ref_.positions.push_back(p);
    ref_.values.insert(ref_.values.end(), &weights_[p * D], &weights_[p * D] + D);
    ref_.weights.push_back(1.0);
  }
}

TableBench::TableBench(const TableGroup& g, const TuneOptions& o, uint64_t cap_bytes, uint64_t seed) : g_(g) {
  rows_ = measured_rows(g.rows, g.dim, cap_bytes);
  const size_t max_hot = static_cast<size_t>(std::min<uint64_t>(rows_ == g.rows ? g.rows : rows_ / 2, uint64_t{1} << 20));
  const AccessModel m = access_model(g.counts, g.rows, max_hot);
  const auto perm = kernels::random_permutation(rows_, seed);
  const Placement at = place_counts(m, perm);
  model_weights_ = m.hot_counts;
  if (at.T) model_weights_.push_back(m.tail_lookups);
  hot_ = at.H;
  tail_ = at.T;
  kernels::Rng rng(seed ^ 0xba7c4e5ULL);
  draw_batches(at, perm, o, rng);
  train_ = training_step_of(g);
  weights_.resize(rows_ * g.dim);
  kernels::random_weights(weights_.data(), rows_, g.dim, seed ^ 0x3e1647ULL);
  if (g.snapshot) place_snapshot(*g.snapshot, at, perm);
  else sample_synthetic_reference(m, at, perm, rng);
  uniform_reference_if_unread(perm);
}

bool row_format(const std::string& strategy) {
  return strategy == "fp32" || strategy == "fp16" || strategy == "bf16" || strategy == "fp8" || strategy == "int8" ||
         strategy == "int4";
}

bool lossless(const std::string& strategy, bool baseline) {
  return baseline || strategy == "offload" || strategy == "pruned";
}

double gate_margin(const std::string& strategy) {
  if (row_format(strategy)) return 1.0;
  if (strategy == "multihash" || strategy == "qr") return 3.0;
  return 1.25;
}

double TableBench::reference_error(const Candidate& c, const TuneOptions& o) const {
  if (lossless(c.strategy, c.baseline)) return 0.0;
  const uint64_t n = ref_.positions.size();
  if (n == 0) return 0.0;
  // The reference rows as a table; their weights as counts (the fitted formats weigh rows by
  // them), positions 0..n-1.
  std::vector<uint64_t> counts(n);
  for (uint64_t i = 0; i < n; ++i)
    counts[i] = ref_.weights[i] > 0 ? std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(ref_.weights[i]))) : 0;
  kernels::EncodeOptions eo;
  eo.counts = counts.data();
  eo.seed = o.seed;
  const auto table = kernels::encode(measured_spec(c, g_.rows, n), ref_.values.data(), n, g_.dim, eo);
  ReferenceRows own;
  own.positions.resize(n);
  for (uint64_t i = 0; i < n; ++i) own.positions[i] = i;
  own.values = ref_.values;
  own.weights = ref_.weights;
  return weighted_error(*table, own);
}

double TableBench::lru_hit_rate(uint64_t slots, uint64_t seed) const {
  if (model_weights_.empty()) return 0.0;
  if (slots >= rows_) return 1.0;
  // The cache's hit rate depends on which accesses repeat, not on where the rows are (a row's
  // set is a hash of its id): rows are labelled 0..H-1 (hot) and H..H+T-1 (tail) here. The
  // stream goes through the cache in batches of one step's lookups, as the passes do.
  const Alias alias(model_weights_);
  kernels::Rng rng(seed ^ 0x17a5e3ULL);
  kernels::LruCache lru(slots);
  std::vector<kernels::LruCache::Fill> fills;
  const auto n = static_cast<uint64_t>(std::max<double>(lookups_per_pass_, 4.0 * static_cast<double>(slots)));
  std::vector<int64_t> batch;
  uint64_t hits = 0, counted = 0;
  for (int phase = 0; phase < 2; ++phase) {  // warm-up, then counted
    for (uint64_t done = 0; done < n;) {
      const uint64_t len = std::min<uint64_t>(n - done, batch_);
      batch.resize(len);
      for (auto& x : batch) {
        const uint32_t k = alias.draw(rng);
        x = k < hot_ ? static_cast<int64_t>(k) : static_cast<int64_t>(hot_ + rng.below(tail_));
      }
      fills.clear();
      const uint64_t h = lru.batch(batch.data(), static_cast<int64_t>(len), fills);
      if (phase == 1) {
        hits += h;
        counted += len;
      }
      done += len;
    }
  }
  return counted ? static_cast<double>(hits) / static_cast<double>(counted) : 0.0;
}

double TableBench::offload_hit_rate(const Candidate& c, const kernels::StrategySpec& s, double measured, bool fresh_lru,
                                    const TuneOptions& o) const {
  if (c.heldout_hit_rate) return *c.heldout_hit_rate;
  if (!fresh_lru) return measured;
  const auto policy = s.params.find("policy");
  if (policy == s.params.end() || policy->second != "lru") return measured;
  const auto cache = s.params.find("cache");
  const double f = cache == s.params.end() ? 0.1 : std::stod(cache->second);
  return lru_hit_rate(std::min<uint64_t>(rows_, static_cast<uint64_t>(f * static_cast<double>(rows_))), o.seed);
}

namespace {

// What a pass times: the forward of an embedding bag, one step's lookups pooled (sum) into
// their bags with the batch's offsets, as a recommender's forward does (issue 19 point 4: not
// the bare gather of the rows). A training step's backward and optimizer update are not timed
// (docs/tuning.md "Measurement").
constexpr bool kBag = true;

// The interval of the repetitions: their whole range. A wide interval only makes more ties,
// which the plan breaks by loss and bytes: a candidate counts as faster only when every
// repetition says so.
std::pair<double, double> spread_of(const std::vector<double>& v) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return {*lo, *hi};
}

}  // namespace

std::unique_ptr<kernels::EncodedTable> TableBench::encode_measured(const kernels::StrategySpec& spec, const TuneOptions& o) const {
  kernels::EncodeOptions eo;
  eo.counts = counts_.data();
  eo.seed = o.seed;
  return kernels::encode(spec, weights_.data(), rows_, g_.dim, eo);
}

kernels::EncodedTable& TableBench::baseline_table(const TuneOptions& o) {
  // A baseline spec is a bare format name: a spec without parameters.
  if (!base_table_) base_table_ = encode_measured(kernels::StrategySpec{baseline_spec(g_.dtype), {}}, o);
  return *base_table_;
}

double TableBench::full_error(const Candidate& c, const TuneOptions& o) const {
  return weighted_error(*encode_measured(measured_spec(c, g_.rows, rows_), o), ref_);
}

Measurement TableBench::measure(const Candidate& c, kernels::Backend& backend, const TuneOptions& o, double baseline_us) {
  if (train_.training) return measure_training(c, backend, o, baseline_us);
  Measurement out;
  out.covers = step_covers(train_, false);
  out.measured_rows = rows_;
  const kernels::StrategySpec spec = measured_spec(c, g_.rows, rows_);
  const auto table = encode_measured(spec, o);
  out.error = weighted_error(*table, ref_);
  auto loaded = backend.load(*table, work_);
  const bool cpu = backend.name() == "cpu";
  const bool have_base = !c.baseline && std::isfinite(baseline_us) && baseline_us > 0;
  // On the CPU backend an offloaded table's cache and host rows sit in one memory: what a GPU
  // pays for a miss (the host link) cannot be timed, and timing the CPU's cache bookkeeping
  // says nothing about a GPU's. Its lookups are the baseline's plus the modelled transfer of
  // the misses measured here (a static cache: one warm-up pass, one pass counts the hits; an
  // LRU: lru_hit_rate()): offload then costs what its misses cost, the same on every run.
  const bool modelled = cpu && c.strategy == "offload" && have_base;
  const bool paired = have_base && !modelled;
  if (paired && !base_loaded_) {
    base_loaded_ = backend.load(baseline_table(o), work_);
    base_loaded_->pass(kBag);  // warm
  }
  // Warm-up, then reps timed repetitions of k passes each, k chosen so that a repetition lasts
  // at least min_rep_s: a burst of other work on the machine then spoils one repetition (which
  // the median drops), not all of them. Paired: each repetition of the candidate is followed
  // by one of the baseline, and the ratio of the two is what counts.
  double pass_s = 0;
  for (int i = 0; i < std::max(1, o.warmup); ++i) pass_s = loaded->pass(kBag);
  const int k = modelled ? 1 : static_cast<int>(std::clamp(std::ceil(o.min_rep_s / std::max(pass_s, 1e-9)), 1.0, 1000.0));
  loaded->reset_stats();
  std::vector<double> secs, ratios;
  for (int i = 0; i < (modelled ? 1 : std::max(1, o.reps)); ++i) {
    double t = 0;
    for (int j = 0; j < k; ++j) t += loaded->pass(kBag);
    secs.push_back(t / k);
    if (paired) {
      double b = 0;
      for (int j = 0; j < k; ++j) b += base_loaded_->pass(kBag);
      if (b > 0) ratios.push_back(t / b);
    }
  }
  const double per_s = 1.0 / lookups_per_pass_ * g_.lookups_per_step * 1e6;  // seconds per pass -> us per step
  if (paired && !ratios.empty()) {
    out.step_us = baseline_us * median_of(ratios);
    const auto [lo, hi] = spread_of(ratios);
    out.step_us_lo = baseline_us * lo;
    out.step_us_hi = baseline_us * hi;
  } else {
    out.step_us = median_of(secs) * per_s;
    const auto [lo, hi] = spread_of(secs);
    out.step_us_lo = lo * per_s;
    out.step_us_hi = hi * per_s;
  }
  double hit = loaded->hit_rate();  // < 0: not a cached table
  if (hit >= 0) hit = offload_hit_rate(c, spec, hit, modelled, o);
  if (hit >= 0) {
    out.hit_rate = hit;
    if (cpu) {
      // A GPU would fetch every missed row over the host link; the CPU backend cannot show it.
      const double transfer_us = (1.0 - hit) * g_.lookups_per_step * 4.0 * g_.dim / kModelledHostLinkBytesPerS * 1e6;
      if (modelled) {
        out.step_us = baseline_us + transfer_us;
        out.step_us_lo = out.step_us_hi = std::numeric_limits<double>::quiet_NaN();
        out.note = "CPU backend: the baseline's lookups plus the misses' transfer modelled at 25 GB/s";
      } else {
        out.step_us += transfer_us;
        out.step_us_lo += transfer_us;
        out.step_us_hi += transfer_us;
        out.note = "miss transfers modelled at 25 GB/s (CPU backend)";
      }
    }
  }
  if (rows_ < g_.rows) {
    if (!out.note.empty()) out.note += "; ";
    out.note += "measured on " + std::to_string(rows_) + " of " + std::to_string(g_.rows) + " rows (scaled)";
  }
  return out;
}

double median_of(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace edo::tuner
