// TableBench::measure_training(): one candidate's training step (docs/tuning.md "What a step
// is"). Where the backend can train the format in place (Backend::load_training), each
// repetition runs k passes of forward + backward + optimizer update over the batches (one
// step each) and is followed by as many of the baseline's training passes; the step time is
// the baseline's times the median ratio (as measure() pairs forward passes). Elsewhere (the
// inference formats, offload on the CPU, every format on a backend without optimizer kernels)
// the forward pooled bag is timed, paired with the baseline's forward, and the backward and
// update are modelled: from the baseline's measured backward and update scaled by the bytes
// each moves (step_bytes), or, where the baseline could not be trained either, from the
// forward's measured time per byte.
#include <algorithm>
#include <cmath>

#include "edo/kernels/encode.h"
#include "measure.h"

namespace edo::tuner {

// A step's forward, backward and update, in microseconds.
struct TableBench::Phases {
  double fwd = 0, bwd = 0, upd = 0;
  double total() const { return fwd + bwd + upd; }
};

// From one pass over the batches to one step of the job: seconds of a pass -> microseconds per
// step (lookup-bound phases scale with the lookups of a step, a dense gradient's update with the
// table's rows, once per step: per batch), and the byte model of the backward and update
// (step_timing.h) with the distinct rows per step from the batches.
struct TableBench::PassScale {
  double per_lookup = 0;
  double batches = 0;
  double distinct = 0;
  StepBytes mine;  // this candidate's bytes per phase
  Phases scaled(const kernels::StepPhases& p, bool dense, uint64_t rows, uint64_t measured) const {
    Phases s;
    s.fwd = p.forward_s * per_lookup;
    s.bwd = p.backward_s * per_lookup;
    s.upd = dense ? p.update_s / batches * static_cast<double>(rows) / static_cast<double>(measured) * 1e6 : p.update_s * per_lookup;
    return s;
  }
};

// The timed repetitions (per step) and, paired, each one's ratio to the baseline's.
struct TableBench::PhaseReps {
  std::vector<Phases> reps;
  std::vector<double> ratios;
};

namespace {

// Passes per repetition: enough for --min-rep-s (a pass of `pass_s`), 1 to 1000.
int passes_per_rep(double min_rep_s, double pass_s) {
  return static_cast<int>(std::clamp(std::ceil(min_rep_s / std::max(pass_s, 1e-9)), 1.0, 1000.0));
}

// The mean phases of k training passes.
kernels::StepPhases mean_of_passes(kernels::TrainingTable& t, int k) {
  kernels::StepPhases sum;
  for (int j = 0; j < k; ++j) {
    const auto p = t.pass();
    sum.forward_s += p.forward_s / k;
    sum.backward_s += p.backward_s / k;
    sum.update_s += p.update_s / k;
  }
  return sum;
}

}  // namespace

TableBench::PassScale TableBench::pass_scale(const TrainingStep& step, const kernels::EncodedTable& table) const {
  PassScale s;
  s.per_lookup = g_.lookups_per_step / lookups_per_pass_ * 1e6;
  s.batches = static_cast<double>(work_.batches.size());
  s.distinct = std::min(static_cast<double>(g_.rows), distinct_per_batch_ * g_.lookups_per_step / static_cast<double>(batch_));
  s.mine = step_bytes(step, g_.lookups_per_step, s.distinct, g_.rows, g_.dim, table.bytes_read_per_row());
  return s;
}

// The backend trains the format in place: each repetition is k passes of forward + backward +
// update, followed (paired) by k of the baseline's training passes.
TableBench::PhaseReps TableBench::time_training(kernels::TrainingTable& train, const TrainingStep& step,
                                                const PassScale& scale, kernels::Backend& backend, const TuneOptions& o,
                                                bool paired) {
  PhaseReps out;
  if (paired && !base_train_) {
    base_train_ = backend.load_training(baseline_table(o), work_, train_.spec);
    if (base_train_) base_train_->pass();  // warm
  }
  double pass_s = 0;
  for (int i = 0; i < std::max(1, o.warmup); ++i) pass_s = train.pass().total();
  // A repetition is k passes of each: k from the slower of the two (a dense baseline's
  // sweep may take many times a sparse candidate's pass).
  if (paired && base_train_) pass_s = std::max(pass_s, base_train_->pass().total());
  const int k = passes_per_rep(o.min_rep_s, pass_s);
  for (int i = 0; i < std::max(1, o.reps); ++i) {
    out.reps.push_back(scale.scaled(mean_of_passes(train, k), step.spec.dense_gradient, g_.rows, rows_));
    if (paired && base_train_) {
      const double bt = scale.scaled(mean_of_passes(*base_train_, k), train_.spec.dense_gradient, g_.rows, rows_).total();
      if (bt > 0) out.ratios.push_back(out.reps.back().total() / bt);
    }
  }
  return out;
}

// Forward passes alone, paired with the baseline's forward where the baseline was measured.
TableBench::PhaseReps TableBench::time_forward(kernels::LoadedTable& loaded, const PassScale& scale,
                                               kernels::Backend& backend, const TuneOptions& o, bool paired) {
  PhaseReps out;
  if (paired && !base_loaded_) {
    base_loaded_ = backend.load(baseline_table(o), work_);
    base_loaded_->pass(true);  // warm
  }
  double pass_s = 0;
  for (int i = 0; i < std::max(1, o.warmup); ++i) pass_s = loaded.pass(true);
  const int k = passes_per_rep(o.min_rep_s, pass_s);
  loaded.reset_stats();
  for (int i = 0; i < std::max(1, o.reps); ++i) {
    double t = 0;
    for (int j = 0; j < k; ++j) t += loaded.pass(true);
    out.reps.push_back(Phases{t / k * scale.per_lookup, 0, 0});
    if (paired) {
      double b = 0;
      for (int j = 0; j < k; ++j) b += base_loaded_->pass(true);
      if (b > 0) out.ratios.push_back(t / b);
    }
  }
  return out;
}

namespace {

// The step's phases as the repetitions' medians and its interval (their range). Paired: the
// reference's time (`ref`: the baseline's training step, or for a forward alone the baseline's
// forward) times the median ratio, the phases split in proportion to their medians.
template <typename Phases, typename Reps>
Phases median_step(const Reps& r, double ref, double& lo, double& hi) {
  lo = hi = std::numeric_limits<double>::quiet_NaN();
  if (r.reps.empty()) return Phases{};
  std::vector<double> f, b, u, tot;
  for (const auto& p : r.reps) {
    f.push_back(p.fwd);
    b.push_back(p.bwd);
    u.push_back(p.upd);
    tot.push_back(p.total());
  }
  Phases med{median_of(f), median_of(b), median_of(u)};
  double total = median_of(tot), tlo = *std::min_element(tot.begin(), tot.end()), thi = *std::max_element(tot.begin(), tot.end());
  if (!r.ratios.empty() && ref > 0) {
    total = ref * median_of(r.ratios);
    tlo = ref * *std::min_element(r.ratios.begin(), r.ratios.end());
    thi = ref * *std::max_element(r.ratios.begin(), r.ratios.end());
  }
  const double sum = med.total();
  if (sum > 0) med = Phases{med.fwd * total / sum, med.bwd * total / sum, med.upd * total / sum};
  else med = Phases{total, 0, 0};
  lo = tlo;
  hi = thi;
  return med;
}

}  // namespace

// The backward and update where the backend does not run them: the baseline's measured ones
// scaled by the bytes each moves (`scale_base`), or (no baseline trained here) the forward's
// measured time per byte.
TableBench::Phases TableBench::modelled_backward_update(const PassScale& scale, double fwd_us, bool scale_base) const {
  Phases m;
  const StepBytes& mine = scale.mine;
  if (scale_base) {
    const StepBytes base = step_bytes(train_, g_.lookups_per_step, scale.distinct, g_.rows, g_.dim, base_row_bytes_);
    m.bwd = base.backward > 0 ? base_bwd_us_ * mine.backward / base.backward : 0;
    m.upd = base.update > 0 ? base_upd_us_ * mine.update / base.update : 0;
  } else {
    const double per_byte = mine.forward > 0 ? fwd_us / mine.forward : 0;
    m.bwd = per_byte * mine.backward;
    m.upd = per_byte * mine.update;
  }
  return m;
}

// Offload on the CPU: the baseline's forward plus the host link: each missed row fetched for
// the forward and written back after its update, and the optimizer state (kept on the host
// with offload) of every updated row read and written; the backward and update modelled.
std::string TableBench::model_offload_step(const Candidate& c, const kernels::StrategySpec& spec, kernels::LoadedTable& loaded,
                                           const TrainingStep& step, const PassScale& scale, const TuneOptions& o,
                                           Phases& med, Measurement& out) const {
  const double hit = std::max(0.0, offload_hit_rate(c, spec, loaded.hit_rate(), true, o));
  out.hit_rate = hit;
  const double row = 4.0 * g_.dim;
  const double state = static_cast<double>(kernels::state_floats_per_row(step.spec.optimizer, g_.dim)) * 4.0;
  const double fetch_us = (1.0 - hit) * g_.lookups_per_step * row / kModelledHostLinkBytesPerS * 1e6;
  const double back_us = ((1.0 - hit) * scale.distinct * row + scale.distinct * 2.0 * state) / kModelledHostLinkBytesPerS * 1e6;
  const Phases m = modelled_backward_update(scale, base_fwd_us_, base_known_ && base_trained_ && !c.baseline);
  med = Phases{base_fwd_us_ + fetch_us, m.bwd, m.upd + back_us};
  return "CPU backend: the baseline's forward, backward and update plus the misses' fetch and write-back and the "
         "host-side optimizer state's traffic modelled at 25 GB/s";
}

// The forward alone was timed (the backend does not train the format): the backward and update
// modelled, and added to the interval too; says how.
std::string TableBench::model_untrained_phases(const Candidate& c, const kernels::Backend& backend, const PassScale& scale,
                                               bool scale_base, Phases& med, double& lo, double& hi) const {
  const Phases m = modelled_backward_update(scale, med.fwd, scale_base);
  med.bwd = m.bwd;
  med.upd = m.upd;
  if (std::isfinite(lo)) {
    lo += med.bwd + med.upd;
    hi += med.bwd + med.upd;
  }
  if (scale_base)
    return "backward and update modelled: the baseline's measured ones scaled by the bytes each moves (" + c.strategy +
           " is not trained in place on this backend)";
  if (backend.name() == "cpu") return "backward and update modelled from the forward's measured time per byte";
  return "backward and update modelled from the forward's measured time per byte (no optimizer kernels on the " +
         backend.name() + " backend: scripts/gpu-check.sh)";
}

// The baseline's phases: the reference of the candidates' modelled parts.
void TableBench::remember_baseline(const Phases& med, bool trained, const kernels::EncodedTable& table) {
  base_known_ = true;
  base_trained_ = trained;
  base_fwd_us_ = med.fwd;
  base_bwd_us_ = med.bwd;
  base_upd_us_ = med.upd;
  base_row_bytes_ = table.bytes_read_per_row();
}

Measurement TableBench::measure_training(const Candidate& c, kernels::Backend& backend, const TuneOptions& o,
                                         double baseline_us) {
  // The baseline's phases are the reference of the modelled parts: measured once per setup
  // (again when an evicted setup is rebuilt).
  if (!c.baseline && !base_known_) {
    Candidate b;
    b.strategy = b.spec = baseline_spec(g_.dtype);
    b.kernel.name = b.spec;  // a bare format name: a spec without parameters
    b.baseline = true;
    measure_training(b, backend, o, std::numeric_limits<double>::quiet_NaN());
  }
  Measurement out;
  out.measured_rows = rows_;
  const TrainingStep step = candidate_step(train_, c);
  const kernels::StrategySpec spec = measured_spec(c, g_.rows, rows_);
  const auto table = encode_measured(spec, o);
  out.error = weighted_error(*table, ref_);
  // Offload on the CPU: the baseline's step plus the modelled transfers (as in measure()).
  const bool offload_modelled = backend.name() == "cpu" && c.strategy == "offload";
  std::unique_ptr<kernels::TrainingTable> train;
  if (!offload_modelled) train = backend.load_training(*table, work_, step.spec);
  std::unique_ptr<kernels::LoadedTable> loaded;
  if (!train) loaded = backend.load(*table, work_);
  const bool have_base = !c.baseline && std::isfinite(baseline_us) && baseline_us > 0;
  const PassScale scale = pass_scale(step, *table);

  PhaseReps reps;
  if (offload_modelled) {
    // One warm-up pass, one pass counts the hits (measure()'s static cache; the LRU below).
    loaded->pass(true);
    loaded->reset_stats();
    loaded->pass(true);
  } else if (train) {
    reps = time_training(*train, step, scale, backend, o, have_base && base_trained_);
  } else {
    reps = time_forward(*loaded, scale, backend, o, have_base && base_known_);
  }
  double lo = 0, hi = 0;
  Phases med = median_step<Phases>(reps, train ? baseline_us : base_fwd_us_, lo, hi);

  const bool scale_base = base_known_ && base_trained_ && !c.baseline;
  std::string note;
  if (offload_modelled) {
    note = model_offload_step(c, spec, *loaded, step, scale, o, med, out);
  } else if (!train) {
    note = model_untrained_phases(c, backend, scale, scale_base, med, lo, hi);
  }
  if (c.strategy == "offload" && !out.hit_rate) {
    // A backend that trains the offloaded table itself (or times its forward only).
    if (const double hit = offload_hit_rate(c, spec, loaded ? loaded->hit_rate() : -1.0, false, o); hit >= 0)
      out.hit_rate = hit;
  }
  out.forward_us = med.fwd;
  out.backward_us = med.bwd;
  out.update_us = med.upd;
  out.step_us = med.total();
  out.step_us_lo = offload_modelled ? std::numeric_limits<double>::quiet_NaN() : lo;
  out.step_us_hi = offload_modelled ? std::numeric_limits<double>::quiet_NaN() : hi;
  out.covers = step_covers(step, !train);
  out.note = note;
  if (c.baseline && c.optimizer.empty()) remember_baseline(med, train != nullptr, *table);
  if (rows_ < g_.rows) {
    if (!out.note.empty()) out.note += "; ";
    out.note += "measured on " + std::to_string(rows_) + " of " + std::to_string(g_.rows) + " rows (scaled)";
  }
  return out;
}

}  // namespace edo::tuner
