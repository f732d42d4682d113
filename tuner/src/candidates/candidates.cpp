#include "candidates.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cache_policies.h"
#include "activation_notes.h"
#include "cache_replay.h"
#include "edo/dtype.h"
#include "edo/kernels/strategy.h"
#include "llm_candidates.h"
#include "mch_candidates.h"
#include "step_timing.h"
#include "trim_candidates.h"

namespace edo::tuner {

using model::StrategyParams;
using P = model::StrategyParams;

void Candidate::set_spec(const std::string& text) {
  kernel = kernels::StrategySpec::parse(text);
  spec = text;
}

std::string baseline_spec(const std::string& dtype) {
  const auto t = parse_dtype(dtype);
  if (!t) return "";
  return kernels::strategy_of_dtype(*t).value_or("");
}

std::vector<uint64_t> offload_cache_rows(const stats::TableSummary& summary, uint64_t rows) {
  std::vector<uint64_t> out;
  auto curve = summary.lru_curve;
  std::sort(curve.begin(), curve.end(), [](const stats::CurvePoint& a, const stats::CurvePoint& b) { return a.x < b.x; });
  // At the curve's own points: the first size whose recorded hit rate reaches the target.
  // Between two points the curve is not known (a scan's is a step: 0 below the scan's rows,
  // nearly 1 from them on), and a size interpolated there may hit nothing.
  for (double target : {0.5, 0.8, 0.9, 0.95, 0.99}) {
    for (const auto& p : curve) {
      if (p.y >= target) {
        const uint64_t k = static_cast<uint64_t>(std::max(1.0, std::ceil(p.x)));
        if (k < rows) out.push_back(k);
        break;
      }
    }
  }
  std::sort(out.begin(), out.end());
  std::vector<uint64_t> merged;
  for (uint64_t k : out)
    if (merged.empty() || static_cast<double>(k) > 1.05 * static_cast<double>(merged.back())) merged.push_back(k);
  return merged;
}

namespace {

std::string round_trip_number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Elements and rows the optimizer trains in a format (what its state is sized by).
struct Trainable {
  double elements = 0;
  double rows = 0;
};

struct Builder {
  const TableGroup& g;
  const SizeFn& size;
  std::vector<Candidate> out;
  uint64_t kept_rows = 0;

  bool training() const { return g.optimizer_bytes > 0 || g.grad_bytes > 0; }

  // A table trained in fp16/bf16 the way edo.apply_plan trains it (numerics.h: fp32 optimizer
  // state, stochastic rounding) keeps its gradient in the weights' dtype, as autograd makes
  // it: a dense gradient scales with the element size; a sparse one (values and one int64
  // index per looked-up row) in its values only. The state stays as recorded (fp32).
  double grad_scale(const std::string& strategy) const {
    if (!training() || (strategy != "fp16" && strategy != "bf16")) return 1.0;
    const double from = model::dtype_size(g.dtype), to = 2.0, D = g.dim;
    if (from <= to || g.grad_bytes == 0) return 1.0;
    const bool dense_grad = g.grad_bytes == g.weight_bytes + g.identical_bytes;
    return dense_grad ? to / from : (D * to + 8.0) / (D * from + 8.0);
  }

  void add(const std::string& strategy, const std::string& spec, StrategyParams params, int level, bool retrain, Trainable tr,
           uint64_t cache_rows = 0, std::optional<double> recorded = std::nullopt, bool baseline = false) {
    Candidate c;
    c.strategy = strategy;
    c.set_spec(spec);
    c.params = std::move(params);
    c.level = level;
    // A training job cannot train an inference format in place (step_timing.h).
    c.needs_retraining = retrain || (training() && !baseline && training_needs_retraining(strategy));
    c.cache_rows = cache_rows;
    c.recorded_hit_rate = recorded;
    c.baseline = baseline;
    const FormatSize w = size(c.kernel, g.rows, g.dim, kept_rows);
    const bool offload = strategy == "offload";
    // Tables with identical weights (g.identical): the baseline keeps them apart, as
    // recorded; every other candidate shares one copy (and one optimizer state).
    const bool apart = baseline && !g.identical.empty();
    const bool shared = !baseline && !g.identical.empty();
    const double one = static_cast<double>(g.weight_bytes) / static_cast<double>(g.weight_bytes + g.identical_bytes);
    const double base = static_cast<double>(g.rows) * g.dim / (shared ? one : 1.0);
    // The recorded optimizer, sized to the format's parameters; offload keeps it on the host.
    const auto state = static_cast<uint64_t>(std::llround(static_cast<double>(g.optimizer_bytes) * tr.elements / base));
    const auto grads = static_cast<uint64_t>(std::llround(static_cast<double>(g.grad_bytes) * tr.elements / base * grad_scale(strategy)));
    c.device_bytes = w.device_bytes + (offload ? 0 : state + grads) + (apart ? g.identical_bytes : 0);
    c.host_bytes = w.host_bytes + (offload ? state + grads : 0);
    if (apart || shared) {
      c.params.set(apart ? &P::apart_from : &P::shared_by, g.identical);
      c.needs_retraining = c.needs_retraining || (shared && training());
    }
    out.push_back(c);
    // The optimizer-state lever: row-wise Adagrad (one float per trained row) with sparse
    // gradients (the rows one step reads, at most) instead of the recorded optimizer, when
    // that holds more than 1.5 floats per row. Never for weights tied to another layer (a
    // tied LM head): the output layer's gradient reaches every row at every step, so it is
    // dense and a sparse-gradient optimizer cannot train it.
    if (training() && g.optimizer_bytes > 6 * g.rows && g.members.size() == g.identical.size() && g.dense_use.empty()) {
      Candidate v = c;
      v.optimizer = "rowwise_adagrad";
      v.needs_retraining = true;
      v.baseline = false;  // the baseline format's twin changes the optimizer: not the table as recorded
      // Timed on its own: its update (row-wise Adagrad, sparse gradient) is not the recorded
      // optimizer's (step_timing.h).
      const double touched = std::min(std::ceil(g.lookups_per_step), tr.rows);
      const auto lever = static_cast<uint64_t>(tr.rows * 4 + touched * g.dim * 4);
      v.device_bytes = w.device_bytes + (offload ? 0 : lever) + (apart ? g.identical_bytes : 0);
      v.host_bytes = w.host_bytes + (offload ? lever : 0);
      out.push_back(v);
    }
  }
};

// Row formats no larger than the baseline: fp16/bf16, int8, int4, fp8.
void add_row_formats(Builder& b, const std::string& base, const Trainable& dense) {
  if (base == "fp32") {
    b.add("fp16", "fp16", {}, 1, false, dense);
    b.add("bf16", "bf16", {}, 1, false, dense);
  } else if (base == "fp16") {
    b.add("bf16", "bf16", {}, 2, false, dense);
  } else if (base == "bf16") {
    b.add("fp16", "fp16", {}, 2, false, dense);
  }
  b.add("int8", "int8", {}, 1, false, dense);
  b.add("int4", "int4", {}, 1, false, dense);
  if (base != "fp8") b.add("fp8", "fp8", StrategyParams().set(&P::scale, "row"), 2, false, dense);
}

// The offload cache sizes offered: fitted on the replay's earlier part, else from the recorded
// LRU curve; plus the knee of the curve (issue 34 point 3: the size past which extra rows stop
// paying), offered whether or not the curve reaches 50 % hits (the hit rate said is the held-out
// one) — the plan grows a smaller cache of the table up to it with the budget left (plan.cpp).
// `knee` becomes the offered size it coincides with (within 5 %), 0 when there is none.
std::vector<uint64_t> offload_sizes(const TableGroup& g, const std::optional<CacheReplay>& replay, uint64_t& knee) {
  std::vector<uint64_t> sizes = replay ? replay->fitted_cache_rows(g.rows) : offload_cache_rows(g.summary, g.rows);
  knee = replay ? replay->knee_cache_rows(g.rows) : 0;
  if (knee > 0) {
    auto near = std::find_if(sizes.begin(), sizes.end(), [&](uint64_t k) {
      return static_cast<double>(std::max(k, knee)) <= 1.05 * static_cast<double>(std::min(k, knee));
    });
    if (near != sizes.end()) {
      knee = *near;
    } else {
      sizes.push_back(knee);
      std::sort(sizes.begin(), sizes.end());
    }
  }
  return sizes;
}

// Where an offload candidate's hit rates come from: the held-out replay of the recorded order
// (cache_replay.h), every replacement policy replayed on the same held-out part in batches of a
// step (cache_policies.h), or why not.
struct OffloadEvidence {
  std::optional<CacheReplay> replay;
  std::optional<PolicyReplay> policies;
  std::string why_no_replay, why_no_policies;
};

// The LRU candidate's params (what FBGEMM runs): its algorithm (TorchRec's CacheAlgorithm) is
// the one of more held-out hits in FBGEMM's own set-associative cache, LRU when nothing says.
// Returns that algorithm.
std::string add_policy_params(StrategyParams& params, const OffloadEvidence& ev, const std::optional<PolicyRates>& pr) {
  std::string algorithm = "lru";
  if (pr) {
    algorithm = pr->chosen;
    params.set(&P::policy_replays, model::PolicyReplays{pr->cache_rows, pr->slots, ev.policies->rate(), pr->lru, pr->lfu, pr->fbgemm_lru,
                                                        pr->fbgemm_lfu, pr->fbgemm_lru_prefetch, pr->optimal});
    params.set(&P::policy_headroom, pr->headroom());
  } else if (ev.replay) {
    params.set(&P::policy_replays_missing, ev.why_no_policies);
  }
  params.set(&P::cache_policy, algorithm);
  return algorithm;
}

// One cache size's two candidates, an LRU and a static hot set (the LRU of the middle size at
// level 2, the others at 3). The LRU's device bytes are what FBGEMM allocates for its cache
// (cache_policies.h), in place of edo's own smaller cache: the plan is exported to run under
// FBGEMM, which keeps the cache in the table's element size (cache_precision = weights_precision).
void add_offload_size(Builder& b, const OffloadEvidence& ev, uint64_t k, uint64_t knee, bool middle, const Trainable& dense) {
  const TableGroup& g = b.g;
  const double R = static_cast<double>(g.rows);
  // +0.5 row: the kernels take the cache as a fraction and floor fraction * rows.
  const std::string frac = round_trip_number((static_cast<double>(k) + 0.5) / R);
  const double lru = stats::lru_hit_rate(g.counts, static_cast<double>(k));
  const double cov = stats::coverage_of_top(g.counts, k);
  std::optional<PolicyRates> pr;
  if (ev.policies) pr = ev.policies->at(k, g.rows);
  for (const char* policy : {"lru", "static"}) {
    const bool is_lru = std::string(policy) == "lru";
    StrategyParams params;
    params.set(&P::cache_rows, k).set(&P::policy, policy);
    if (ev.replay) {
      params.set(&P::heldout, model::HeldOutReplay{CacheReplay::kFitFraction, ev.replay->rate(), {}, {}, ev.replay->held_out_refs()});
    } else {
      params.set(&P::hit_rate_estimated, ev.why_no_replay);
    }
    if (is_lru && knee > 0) params.set(&P::knee_rows, knee);
    const std::string algorithm = is_lru ? add_policy_params(params, ev, pr) : "lru";
    const size_t at = b.out.size();
    const std::string spec = "offload:cache=" + frac + ":policy=" + policy;
    b.add("offload", spec, params, is_lru && middle ? 2 : 3, false, dense, k, is_lru ? lru : cov);
    if (ev.replay)
      for (size_t j = at; j < b.out.size(); ++j) b.out[j].heldout_hit_rate = is_lru ? ev.replay->lru_hit_rate(k) : ev.replay->static_hit_rate(k);
    if (is_lru) {
      const uint32_t element_bytes = model::dtype_size(g.dtype) == 2 ? 2 : 4;
      const uint64_t own = b.size(b.out[at].kernel, g.rows, g.dim, 0).device_bytes;
      const uint64_t fbgemm = fbgemm_cache_device_bytes(g.rows, g.dim, element_bytes, static_cast<double>(k) / R, algorithm == "lfu", false);
      for (size_t j = at; j < b.out.size(); ++j) b.out[j].device_bytes = b.out[j].device_bytes - own + fbgemm;
    }
  }
}

// Offload with a hot-row cache. With the recording's ordered sample, sizes and the static hot
// set are fitted on its earlier part and the hit rates are the held-out part's, replayed
// (cache_replay.h); without it, sizes come from the recorded LRU curve and the hit rates are
// estimated (said in the params).
void add_offload_candidates(Builder& b, const Trainable& dense) {
  const TableGroup& g = b.g;
  OffloadEvidence ev;
  ev.why_no_replay = g.replay_skipped;
  if (g.replay_skipped.empty()) ev.replay = CacheReplay::of(g.counts, ev.why_no_replay);
  if (ev.replay) ev.policies = PolicyReplay::of(g.counts, g.lookups_per_step, ev.why_no_policies);
  uint64_t knee = 0;
  const std::vector<uint64_t> sizes = offload_sizes(g, ev.replay, knee);
  for (size_t i = 0; i < sizes.size(); ++i) add_offload_size(b, ev, sizes[i], knee, i == sizes.size() / 2, dense);
}

// Pruning of rows never read (exact counts only: a sketch cannot say which rows were read).
// Held out: the rows read in the first half of the recording are the pruned set fitted there;
// the second half's lookups on rows first read after it are what such a table loses on lookups
// it was not fitted to. Each returns a zero row: the access-weighted relative L2 error is
// sqrt(lost fraction) (rows of about equal norm).
void add_pruned_candidate(Builder& b) {
  const TableGroup& g = b.g;
  if (!(g.counts.mode() == stats::CountMode::kExact && g.counts.unique_rows() < g.rows && g.counts.unique_rows() > 0)) return;
  b.kept_rows = g.counts.unique_rows();
  StrategyParams params;
  params.set(&P::kept_rows, b.kept_rows);
  const model::HeldOut h = held_out_of(g);
  if (h.valid) params.set(&P::held_out_lost_fraction, h.lost_fraction()).set(&P::held_out_lookups, h.held_out_lookups);
  if (h.valid && g.first_seen.size() > 1) params.set(&P::held_out_streams, g.first_seen.size());
  const size_t at = b.out.size();
  const double D = g.dim;
  b.add("pruned", "pruned", params, 3, true, Trainable{static_cast<double>(b.kept_rows) * D, static_cast<double>(b.kept_rows)});
  for (size_t i = at; i < b.out.size(); ++i) {
    if (h.valid) b.out[i].held_out_error = std::sqrt(h.lost_fraction());
    b.out[i].validated = h.valid;
  }
}

// Low rank (rank dim/8, dim/4, dim/2) and product quantisation: 8 and 16 columns per sub-space
// (4 would cost more bytes than int8 and far more time to encode); k-means on a 16384-row
// sample, 5 rounds: the encoding the plan names.
void add_fitted_candidates(Builder& b) {
  const TableGroup& g = b.g;
  if (g.dim < 8) return;
  const double R = static_cast<double>(g.rows), D = g.dim;
  uint32_t last = 0;
  for (uint32_t div : {8u, 4u, 2u}) {
    const uint32_t r = std::max(1u, g.dim / div);
    if (r == last || r >= g.dim) continue;
    last = r;
    // With a recorded activation, the rows x r intermediate (and its gradient) per step.
    const uint64_t act = lowrank_activation_bytes(g, r);
    const size_t at = b.out.size();
    StrategyParams params;
    params.set(&P::rank, r);
    if (act) params.set(&P::activation_bytes, act);
    b.add("lowrank", "lowrank:rank=" + std::to_string(r), params, 4, false, Trainable{R * r + double(r) * D, R + r});
    for (size_t i = at; i < b.out.size(); ++i) b.out[i].device_bytes += act;
  }
  for (uint32_t dsub : {8u, 16u}) {
    if (g.dim % dsub != 0 || g.dim / dsub < 1) continue;
    const uint32_t m = g.dim / dsub;
    b.add("pq", "pq:m=" + std::to_string(m) + ":iters=5:sample=16384", StrategyParams().set(&P::m, m).set(&P::k, 256).set(&P::iters, 5).set(&P::sample, 16384), 4,
          false, Trainable{256.0 * m * dsub, 256.0 * m});
  }
}

// Hashing and quotient-remainder: the model must be trained with them.
void add_hashing_candidates(Builder& b) {
  const TableGroup& g = b.g;
  if (g.rows < 1024) return;
  const double R = static_cast<double>(g.rows), D = g.dim;
  for (uint64_t div : {4u, 16u}) {
    const uint64_t buckets = g.rows / div;
    b.add("multihash", "multihash:buckets=" + std::to_string(buckets) + ":k=2", StrategyParams().set(&P::buckets, buckets).set(&P::k, 2), 5, true,
          Trainable{static_cast<double>(buckets) * D, static_cast<double>(buckets)});
  }
  for (uint64_t m : {4u, 16u}) {
    const double q = std::ceil(R / static_cast<double>(m));
    b.add("qr", "qr:m=" + std::to_string(m), StrategyParams().set(&P::m, m), 5, true, Trainable{(q + m) * D, q + m});
  }
}

}  // namespace

std::vector<Candidate> enumerate_candidates(const TableGroup& g, const SizeFn& size) {
  Builder b{g, size, {}, 0};
  const std::string base = baseline_spec(g.dtype);
  if (base.empty() || g.rows == 0 || g.dim == 0) return {};
  const double R = static_cast<double>(g.rows), D = g.dim;
  const Trainable dense{R * D, R};
  b.add(base, base, {}, 0, false, dense, 0, std::nullopt, true);
  // Identical tables: their baseline format with one shared copy (measured as the baseline:
  // the same spec on the same lookups).
  if (!g.identical.empty()) {
    const size_t at = b.out.size();
    b.add(base, base, {}, 1, false, dense);
    b.out[at].measure_as = 0;
  }
  // A table read whole by something other than its lookups (a head's F.linear on its weight)
  // keeps its recorded format: that reader reads the weight tensor itself, so a cast (an fp16
  // weight under an fp32 matmul), a packed format or a host copy would break or slow it
  // (edo.apply_plan leaves such a table as it is for the same reason).
  // Trimming a token table's vocabulary keeps the format: a tied head still reads it whole.
  add_trim_vocab_candidates(g, b.out.front(), b.out);
  if (!g.dense_use.empty()) return std::move(b.out);
  add_row_formats(b, base, dense);
  add_offload_candidates(b, dense);
  add_pruned_candidate(b);
  add_fitted_candidates(b);
  add_hashing_candidates(b);
  // Managed collision (mch_candidates.h): only past the budget, replayed on the recorded order.
  add_mch_candidates(g, size, b.out);
  // Training levers on the recorded format: a sparse gradient, freezing (llm_candidates.h).
  add_training_lever_candidates(g, b.out.front(), b.out);
  return std::move(b.out);
}

}  // namespace edo::tuner
