// The optimizer rules are PyTorch's (torch/optim/{adam,adamw,adagrad,sgd,rmsprop}.py, single
// tensor path: each elementary op's result is rounded to the state's dtype, as a Half tensor's
// ops round theirs) and FBGEMM's row-wise Adagrad (one sum of mean squared gradients per row).
#include "numerics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "edo/kernels/formats/bf16.h"
#include "edo/kernels/formats/fp16.h"
#include "candidates.h"
#include "explain.h"
#include "measure.h"
#include "step_timing.h"
#include "workload.h"

namespace edo::tuner {
namespace {

std::string num(double v) { return number(v, "%g"); }

// x rounded to a storage format, to nearest (ties to even).
float round_to(WeightStore s, float x) {
  switch (s) {
    case WeightStore::kFp16: return kernels::half_to_float(kernels::float_to_half(x));
    case WeightStore::kBf16: return kernels::bf16_to_float(kernels::float_to_bf16(x));
    default: return x;
  }
}

// x rounded stochastically: to one of its two neighbours in the format, the upper with
// probability (x - lower) / (upper - lower), so the rounding is unbiased (FBGEMM's
// stochastic rounding adds random bits below the kept mantissa, which is the same law).
float round_stochastic(WeightStore s, float x, std::mt19937_64& rng) {
  if (s == WeightStore::kFp32 || !std::isfinite(x)) return round_to(s, x);
  float lo, hi;
  if (s == WeightStore::kFp16) {
    lo = kernels::half_to_float(kernels::float_to_half(x, kernels::Round::Down));
    hi = kernels::half_to_float(kernels::float_to_half(x, kernels::Round::Up));
  } else {
    // bf16 keeps a float's top 16 bits: truncation is toward zero, the next one away from it.
    const float t = kernels::bf16_to_float(static_cast<uint16_t>(kernels::float_as_bits(x) >> 16));
    const float away = kernels::bf16_to_float(static_cast<uint16_t>((kernels::float_as_bits(x) >> 16) + 1));
    lo = std::min(t, away);
    hi = std::max(t, away);
  }
  if (lo == hi || !std::isfinite(lo) || !std::isfinite(hi)) return round_to(s, x);
  const double p = (static_cast<double>(x) - lo) / (static_cast<double>(hi) - lo);
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng) < p ? hi : lo;
}

// One table's simulated run: weights in their storage format, state in its own.
struct Run {
  const SimOptimizer& opt;
  StoragePlan store;
  uint32_t dim;
  std::vector<float> w, s1, s2;  // weights; first and second state (Adam moments, Adagrad sum, momentum)
  std::vector<float> row_sum;    // row-wise Adagrad
  std::mt19937_64 rng;
  int t = 0;

  Run(const SimOptimizer& o, StoragePlan st, const SimSetup& su, uint64_t seed)
      : opt(o), store(st), dim(su.dim), w(su.rows), s1(su.rows.size(), 0.f), s2(su.rows.size(), 0.f),
        row_sum(su.rows.size() / std::max<uint32_t>(1, su.dim), 0.f), rng(seed) {
    for (auto& x : w) x = round_to(store.weights, x);
    const float init = r(static_cast<float>(o.p.initial_accumulator_value));
    if (o.kind == "adagrad") std::fill(s1.begin(), s1.end(), init);
  }
  float r(float x) const { return round_to(store.state, x); }  // one op's result in the state's dtype
  float stored(float x) { return store.rounding == Rounding::kStochastic ? round_stochastic(store.weights, x, rng) : round_to(store.weights, x); }

  // One step; `g` holds every row's gradient (zeros where the step read nothing), `updated`
  // the rows the optimizer touches (all of them for a dense gradient).
  void step(const std::vector<float>& g, const std::vector<char>& updated) {
    ++t;
    const auto& p = opt.p;
    const float lr = static_cast<float>(p.lr), eps = r(static_cast<float>(p.eps)), wd = static_cast<float>(p.weight_decay);
    const float b1 = static_cast<float>(p.beta1), b2 = static_cast<float>(p.beta2);
    const size_t rows = row_sum.size();
    for (size_t i = 0; i < rows; ++i) {
      if (!updated[i]) continue;
      if (opt.kind == "rowwise_adagrad") {
        float msq = 0;
        for (uint32_t k = 0; k < dim; ++k) msq += g[i * dim + k] * g[i * dim + k];
        row_sum[i] += msq / static_cast<float>(dim);  // FBGEMM keeps this sum in fp32
        const float denom = std::sqrt(row_sum[i]) + static_cast<float>(p.eps);
        for (uint32_t k = 0; k < dim; ++k) w[i * dim + k] = stored(w[i * dim + k] - lr * g[i * dim + k] / denom);
        continue;
      }
      for (uint32_t k = 0; k < dim; ++k) {
        const size_t j = i * dim + k;
        float gr = g[j];
        float wj = w[j];
        if (opt.kind == "adamw" && wd != 0) wj = r(wj * (1 - lr * wd));
        else if (wd != 0) gr = r(gr + r(wd * wj));
        float upd;  // what is subtracted from the weight
        if (opt.kind == "adagrad") {
          s1[j] = r(s1[j] + r(gr * gr));
          const float sd = r(r(std::sqrt(s1[j])) + eps);
          upd = r(lr * r(gr / sd));
        } else if (opt.kind == "adam" || opt.kind == "adamw") {
          s1[j] = r(r(b1 * s1[j]) + r((1 - b1) * gr));
          s2[j] = r(r(b2 * s2[j]) + r((1 - b2) * r(gr * gr)));
          const float bc1 = 1 - std::pow(b1, static_cast<float>(t)), bc2 = 1 - std::pow(b2, static_cast<float>(t));
          const float denom = r(r(r(std::sqrt(s2[j])) / std::sqrt(bc2)) + eps);
          upd = r(lr / bc1 * r(s1[j] / denom));
        } else if (opt.kind == "rmsprop") {
          const float alpha = b2;  // rmsprop's alpha is kept as beta2
          s2[j] = r(r(alpha * s2[j]) + r((1 - alpha) * r(gr * gr)));
          const float denom = r(r(std::sqrt(s2[j])) + eps);
          upd = r(lr * r(gr / denom));
        } else {  // sgd, with momentum when it has one
          if (p.momentum != 0) {
            s1[j] = t == 1 ? gr : r(r(static_cast<float>(p.momentum) * s1[j]) + gr);
            gr = s1[j];
          }
          upd = r(lr * gr);
        }
        if (p.maximize) upd = -upd;
        w[j] = stored(wj - upd);
      }
    }
  }
  bool finite() const {
    for (size_t j = 0; j < w.size(); ++j)
      if (!std::isfinite(w[j]) || !std::isfinite(s1[j]) || !std::isfinite(s2[j])) return false;
    return true;
  }
};

}  // namespace

std::string SimOptimizer::words() const {
  std::string s = kind + " (lr " + num(p.lr);
  if (kind == "adam" || kind == "adamw" || kind == "adagrad" || kind == "rmsprop" || kind == "rowwise_adagrad") s += ", eps " + num(p.eps);
  if (kind == "adam" || kind == "adamw") s += ", betas " + num(p.beta1) + "/" + num(p.beta2);
  if (kind == "sgd" && p.momentum != 0) s += ", momentum " + num(p.momentum);
  if (p.weight_decay != 0) s += ", weight decay " + num(p.weight_decay);
  s += ")";
  if (!assumed.empty()) {
    s += " [PyTorch's default ";
    for (size_t i = 0; i < assumed.size(); ++i) s += (i ? ", " : "") + assumed[i];
    s += ": not recorded]";
  }
  return s;
}

SimOptimizer sim_optimizer(const std::optional<model::OptimizerParams>& recorded, const std::string& state_kind) {
  SimOptimizer o;
  o.kind = recorded && !recorded->kind.empty() ? recorded->kind : state_kind.empty() ? "sgd" : state_kind;
  if (o.kind == "sparseadam") o.kind = "adam";
  if (o.kind == "rowwiseadagrad") o.kind = "rowwise_adagrad";
  // PyTorch's defaults (torch.optim's signatures); SGD has no default lr: 0.01 is assumed.
  model::OptimizerParams d;
  d.kind = o.kind;
  if (o.kind == "adam" || o.kind == "adamw") {
    d.lr = 1e-3, d.eps = 1e-8, d.beta1 = 0.9, d.beta2 = 0.999, d.weight_decay = o.kind == "adamw" ? 1e-2 : 0;
  } else if (o.kind == "adagrad") {
    d.lr = 1e-2, d.eps = 1e-10;
  } else if (o.kind == "rmsprop") {
    d.lr = 1e-2, d.eps = 1e-8, d.beta2 = 0.99;
  } else if (o.kind == "rowwise_adagrad") {
    d.lr = 1e-2, d.eps = 1e-8;
  } else {
    o.kind = "sgd";
    d.lr = 1e-2;
  }
  if (!recorded || recorded->kind.empty()) {
    o.p = d;
    o.assumed = {"hyperparameters"};
    return o;
  }
  o.p = *recorded;
  o.p.kind = o.kind;
  if (!(o.p.lr > 0)) o.p.lr = d.lr, o.assumed.push_back("lr");
  if ((o.kind == "adam" || o.kind == "adamw") && !(o.p.beta1 > 0 && o.p.beta2 > 0)) o.p.beta1 = d.beta1, o.p.beta2 = d.beta2, o.assumed.push_back("betas");
  if (o.kind == "rmsprop" && !(o.p.beta2 > 0)) o.p.beta2 = d.beta2;  // alpha is not part of the note
  return o;
}

SimVerdict simulate_training(const SimOptimizer& opt, const StoragePlan& store, const SimSetup& su) {
  SimVerdict v;
  const size_t rows = su.dim ? su.rows.size() / su.dim : 0;
  if (rows == 0) return v;
  const char* fmt = store.weights == WeightStore::kFp16 ? "fp16" : store.weights == WeightStore::kBf16 ? "bf16" : "fp32";
  // Gradient scales: the per-element standard deviation of a step's row gradients. Adaptive
  // optimizers step by about lr whatever the scale; plain SGD steps by lr x scale.
  double moved_ref = 0, moved_sto = 0;
  for (double scale : {1e-3, 1e-6, 1.0}) {
    Run ref(opt, StoragePlan{}, su, su.seed), sto(opt, store, su, su.seed ^ 0x5bd1e995u);
    std::mt19937_64 grad_rng(su.seed + static_cast<uint64_t>(scale * 1e9));
    std::normal_distribution<float> normal(0.f, static_cast<float>(scale));
    std::vector<float> g(su.rows.size());
    std::vector<char> read(rows), updated(rows);
    for (int step = 1; step <= su.steps; ++step) {
      std::uniform_real_distribution<double> u(0.0, 1.0);
      size_t any = 0;
      for (size_t i = 0; i < rows; ++i) any += read[i] = u(grad_rng) < su.touched_fraction;
      if (!any) read[grad_rng() % rows] = 1;
      for (size_t i = 0; i < rows; ++i) {
        updated[i] = su.dense_gradient || read[i];
        for (uint32_t k = 0; k < su.dim; ++k) g[i * su.dim + k] = read[i] ? normal(grad_rng) : 0.f;
      }
      ref.step(g, updated);
      sto.step(g, updated);
      if (!sto.finite()) {
        v.safe = false;
        v.first_bad_step = step;
        v.why = opt.words() + " on " + fmt + " weights with " +
                (store.state == WeightStore::kFp32 ? "fp32" : store.state == WeightStore::kFp16 ? "fp16" : "bf16") +
                " state made a row non-finite at step " + std::to_string(step) + " (gradients of scale " + num(scale) + ")";
        if (opt.kind != "sgd" && round_to(store.state, static_cast<float>(opt.p.eps)) == 0.f && opt.p.eps > 0)
          v.why += ": eps " + num(opt.p.eps) + " is 0 in " + (store.state == WeightStore::kFp16 ? "fp16" : "bf16") +
                   ", so a row with a zero gradient computes 0/0";
        return v;
      }
    }
    if (scale != 1e-3) continue;  // the stall check at a typical scale (others: finiteness only)
    size_t moved_rows = 0, stalled = 0;
    for (size_t i = 0; i < rows; ++i) {
      double dr = 0, ds = 0;
      for (uint32_t k = 0; k < su.dim; ++k) {
        const size_t j = i * su.dim + k;
        dr += std::fabs(static_cast<double>(ref.w[j]) - su.rows[j]);
        ds += std::fabs(static_cast<double>(sto.w[j]) - round_to(store.weights, su.rows[j]));
      }
      moved_ref += dr;
      moved_sto += ds;
      if (dr > 0) {
        ++moved_rows;
        stalled += ds == 0;
      }
    }
    v.stalled_fraction = moved_rows ? static_cast<double>(stalled) / static_cast<double>(moved_rows) : 0.0;
  }
  // Updates lost: the stored weights moved less than half as far as fp32's over the same steps
  // (round to nearest drops every update below half an ulp; stochastic rounding keeps them in
  // expectation, so its total movement is at least fp32's).
  if (moved_ref > 0 && moved_sto < 0.5 * moved_ref) {
    v.safe = false;
    v.why = opt.words() + " on " + std::string(fmt) + " weights: its updates round away (the weights moved " +
            num(100.0 * moved_sto / moved_ref) + "% as far as in fp32 over " + std::to_string(su.steps) + " steps; " +
            num(100.0 * v.stalled_fraction) + "% of the rows not at all)";
  }
  return v;
}

namespace {

SimSetup sample_of(const TableGroup& g, uint64_t seed) {
  SimSetup su;
  su.dim = g.dim;
  su.seed = seed;
  constexpr size_t kRows = 256;
  if (g.snapshot && g.snapshot->dim == g.dim && !g.snapshot->rows.empty()) {
    std::vector<float> v = snapshot_fp32(*g.snapshot);
    const size_t n = std::min(kRows, g.snapshot->rows.size());
    su.rows.assign(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n * g.dim));
  } else {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.f, 1.f);
    su.rows.resize(std::min<uint64_t>(kRows, g.rows) * g.dim);
    for (auto& x : su.rows) x = normal(rng);
  }
  const double distinct = std::min(g.lookups_per_step, static_cast<double>(g.rows));
  su.touched_fraction = g.rows ? std::clamp(distinct / static_cast<double>(g.rows), 0.0, 1.0) : 1.0;
  return su;
}

}  // namespace

void check_training_numerics(const TableGroup& g, const std::vector<Candidate>& cands,
                             std::vector<model::TuneCandidate*> results, uint64_t seed) {
  const TrainingStep group = training_step_of(g);
  if (!group.training) return;
  std::optional<SimSetup> sample;
  for (size_t ci = 0; ci < cands.size() && ci < results.size(); ++ci) {
    const Candidate& c = cands[ci];
    if (c.baseline || (c.strategy != "fp16" && c.strategy != "bf16")) continue;
    model::TuneCandidate& m = *results[ci];
    if (!sample) sample = sample_of(g, seed);
    const TrainingStep step = candidate_step(group, c);
    SimSetup su = *sample;
    su.dense_gradient = step.spec.dense_gradient;
    const SimOptimizer opt = sim_optimizer(c.optimizer == "rowwise_adagrad" ? std::nullopt : g.optimizer_params,
                                           c.optimizer == "rowwise_adagrad" ? "rowwise_adagrad" : g.optimizer);
    const WeightStore fmt = c.strategy == "fp16" ? WeightStore::kFp16 : WeightStore::kBf16;
    const SimVerdict v = simulate_training(opt, StoragePlan{fmt, WeightStore::kFp32, Rounding::kStochastic}, su);
    const std::string sep = m.note.empty() ? "" : "; ";
    if (!v.safe) {
      m.rejected = v.why;
      m.rejection = model::RejectionCause::kUnsafeInFormat;
      m.note += sep + "numerically unsafe: " + v.why;
      continue;
    }
    m.note += sep + "numerics: " + opt.words() + " simulated " + std::to_string(su.steps) + " steps on " +
              std::to_string(su.rows.size() / std::max<uint32_t>(1, su.dim)) + (g.snapshot ? " recorded" : " synthetic") +
              " rows in " + c.strategy + " with fp32 optimizer state and stochastic rounding: finite, updates kept";
    if (c.optimizer != "rowwise_adagrad") {
      const SimVerdict plain = simulate_training(opt, StoragePlan{fmt, fmt, Rounding::kNearest}, su);
      if (!plain.safe) m.note += " (plain PyTorch, state in " + c.strategy + ": " + plain.why + ")";
    }
  }
}

}  // namespace edo::tuner
