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
namespace {

struct Phases {
  double fwd = 0, bwd = 0, upd = 0;
  double total() const { return fwd + bwd + upd; }
};

}  // namespace

Measurement TableBench::measure_training(const Candidate& c, kernels::Backend& backend, const TuneOptions& o,
                                         double baseline_us) {
  // The baseline's phases are the reference of the modelled parts: measured once per setup
  // (again when an evicted setup is rebuilt).
  if (!c.baseline && !base_known_) {
    Candidate b;
    b.strategy = b.spec = baseline_spec(g_.dtype);
    b.baseline = true;
    measure_training(b, backend, o, std::numeric_limits<double>::quiet_NaN());
  }
  Measurement out;
  out.measured_rows = rows_;
  const TrainingStep step = candidate_step(train_, c);
  const std::string spec = measured_spec(c, g_.rows, rows_);
  const auto table = encode_measured(spec, o);
  out.error = weighted_error(*table, ref_);
  const bool cpu = backend.name() == "cpu";
  // Offload on the CPU: the baseline's step plus the modelled transfers (as in measure()).
  const bool offload_modelled = cpu && c.strategy == "offload";
  std::unique_ptr<kernels::TrainingTable> train;
  if (!offload_modelled) train = backend.load_training(*table, work_, step.spec);
  std::unique_ptr<kernels::LoadedTable> loaded;
  if (!train) loaded = backend.load(*table, work_);
  const bool have_base = !c.baseline && std::isfinite(baseline_us) && baseline_us > 0;

  // Seconds of a pass -> microseconds per step: lookup-bound phases scale with the lookups of
  // a step, a dense gradient's update with the table's rows (once per step: per batch).
  const double per_lookup = g_.lookups_per_step / lookups_per_pass_ * 1e6;
  const double batches = static_cast<double>(work_.batches.size());
  auto scaled = [&](const kernels::StepPhases& p, bool dense) {
    Phases s;
    s.fwd = p.forward_s * per_lookup;
    s.bwd = p.backward_s * per_lookup;
    s.upd = dense ? p.update_s / batches * static_cast<double>(g_.rows) / static_cast<double>(rows_) * 1e6 : p.update_s * per_lookup;
    return s;
  };
  // The byte model of the backward and update (step_timing.h) for this candidate and for the
  // baseline: distinct rows per step from the batches.
  const double distinct = std::min(static_cast<double>(g_.rows), distinct_per_batch_ * g_.lookups_per_step / static_cast<double>(batch_));
  const StepBytes mine = step_bytes(step, g_.lookups_per_step, distinct, g_.rows, g_.dim, table->bytes_read_per_row());

  std::vector<Phases> reps;
  std::vector<double> ratios;
  int k = 1;
  if (offload_modelled) {
    // One warm-up pass, one pass counts the hits (measure()'s static cache; the LRU below).
    loaded->pass(true);
    loaded->reset_stats();
    loaded->pass(true);
  } else if (train) {
    const bool paired = have_base && base_trained_;
    if (paired && !base_train_) {
      base_train_ = backend.load_training(baseline_table(o), work_, train_.spec);
      if (base_train_) base_train_->pass();  // warm
    }
    double pass_s = 0;
    for (int i = 0; i < std::max(1, o.warmup); ++i) pass_s = train->pass().total();
    // A repetition is k passes of each: k from the slower of the two (a dense baseline's
    // sweep may take many times a sparse candidate's pass).
    if (paired && base_train_) pass_s = std::max(pass_s, base_train_->pass().total());
    k = static_cast<int>(std::clamp(std::ceil(o.min_rep_s / std::max(pass_s, 1e-9)), 1.0, 1000.0));
    for (int i = 0; i < std::max(1, o.reps); ++i) {
      kernels::StepPhases sum;
      for (int j = 0; j < k; ++j) {
        const auto p = train->pass();
        sum.forward_s += p.forward_s / k;
        sum.backward_s += p.backward_s / k;
        sum.update_s += p.update_s / k;
      }
      reps.push_back(scaled(sum, step.spec.dense_gradient));
      if (paired && base_train_) {
        kernels::StepPhases b;
        for (int j = 0; j < k; ++j) {
          const auto p = base_train_->pass();
          b.forward_s += p.forward_s / k;
          b.backward_s += p.backward_s / k;
          b.update_s += p.update_s / k;
        }
        const double bt = scaled(b, train_.spec.dense_gradient).total();
        if (bt > 0) ratios.push_back(reps.back().total() / bt);
      }
    }
  } else {
    // Forward passes, paired with the baseline's forward where the baseline was measured.
    const bool paired = have_base && base_known_;
    if (paired && !base_loaded_) {
      base_loaded_ = backend.load(baseline_table(o), work_);
      base_loaded_->pass(true);  // warm
    }
    double pass_s = 0;
    for (int i = 0; i < std::max(1, o.warmup); ++i) pass_s = loaded->pass(true);
    k = static_cast<int>(std::clamp(std::ceil(o.min_rep_s / std::max(pass_s, 1e-9)), 1.0, 1000.0));
    loaded->reset_stats();
    for (int i = 0; i < std::max(1, o.reps); ++i) {
      double t = 0;
      for (int j = 0; j < k; ++j) t += loaded->pass(true);
      reps.push_back(Phases{t / k * per_lookup, 0, 0});
      if (paired) {
        double b = 0;
        for (int j = 0; j < k; ++j) b += base_loaded_->pass(true);
        if (b > 0) ratios.push_back(t / b);
      }
    }
  }

  Phases med;  // the step's phases in microseconds
  double lo = std::numeric_limits<double>::quiet_NaN(), hi = lo;
  if (!reps.empty()) {
    std::vector<double> f, b, u, tot;
    for (const auto& p : reps) {
      f.push_back(p.fwd);
      b.push_back(p.bwd);
      u.push_back(p.upd);
      tot.push_back(p.total());
    }
    med = Phases{median_of(f), median_of(b), median_of(u)};
    // Paired: the reference's time times the median ratio (the reference is the baseline's
    // training step, or for a forward alone the baseline's forward), the phases split in
    // proportion to their medians.
    const double ref = train ? baseline_us : base_fwd_us_;
    double total = median_of(tot), tlo = *std::min_element(tot.begin(), tot.end()), thi = *std::max_element(tot.begin(), tot.end());
    if (!ratios.empty() && ref > 0) {
      total = ref * median_of(ratios);
      tlo = ref * *std::min_element(ratios.begin(), ratios.end());
      thi = ref * *std::max_element(ratios.begin(), ratios.end());
    }
    const double sum = med.total();
    if (sum > 0) med = Phases{med.fwd * total / sum, med.bwd * total / sum, med.upd * total / sum};
    else med = Phases{total, 0, 0};
    lo = tlo;
    hi = thi;
  }

  // The backward and update where the backend does not run them: the baseline's measured
  // ones scaled by the bytes each moves, or (no baseline trained here) the forward's measured
  // time per byte.
  const bool scale_base = base_known_ && base_trained_ && !c.baseline;
  auto modelled = [&](double fwd_us) {
    Phases m;
    if (scale_base) {
      const StepBytes base = step_bytes(train_, g_.lookups_per_step, distinct, g_.rows, g_.dim, base_row_bytes_);
      m.bwd = base.backward > 0 ? base_bwd_us_ * mine.backward / base.backward : 0;
      m.upd = base.update > 0 ? base_upd_us_ * mine.update / base.update : 0;
    } else {
      const double per_byte = mine.forward > 0 ? fwd_us / mine.forward : 0;
      m.bwd = per_byte * mine.backward;
      m.upd = per_byte * mine.update;
    }
    return m;
  };
  std::string note;
  if (offload_modelled) {
    // The baseline's forward plus the host link: each missed row fetched for the forward and
    // written back after its update, and the optimizer state (kept on the host with offload)
    // of every updated row read and written; the backward and update as modelled above.
    const double hit = std::max(0.0, offload_hit_rate(c, spec, loaded->hit_rate(), true, o));
    out.hit_rate = hit;
    const double row = 4.0 * g_.dim;
    const double state = static_cast<double>(kernels::state_floats_per_row(step.spec.optimizer, g_.dim)) * 4.0;
    const double fetch_us = (1.0 - hit) * g_.lookups_per_step * row / kModelledHostLinkBytesPerS * 1e6;
    const double back_us = ((1.0 - hit) * distinct * row + distinct * 2.0 * state) / kModelledHostLinkBytesPerS * 1e6;
    const Phases m = modelled(base_fwd_us_);
    med = Phases{base_fwd_us_ + fetch_us, m.bwd, m.upd + back_us};
    note = "CPU backend: the baseline's forward, backward and update plus the misses' fetch and write-back and the "
           "host-side optimizer state's traffic modelled at 25 GB/s";
  } else if (!train) {
    const Phases m = modelled(med.fwd);
    med.bwd = m.bwd;
    med.upd = m.upd;
    if (scale_base)
      note = "backward and update modelled: the baseline's measured ones scaled by the bytes each moves (" + c.strategy +
             " is not trained in place on this backend)";
    else if (backend.name() == "cpu")
      note = "backward and update modelled from the forward's measured time per byte";
    else
      note = "backward and update modelled from the forward's measured time per byte (no optimizer kernels on the " +
             backend.name() + " backend: scripts/gpu-check.sh)";
    if (std::isfinite(lo)) {
      lo += med.bwd + med.upd;
      hi += med.bwd + med.upd;
    }
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
  if (c.baseline && c.optimizer.empty()) {
    base_known_ = true;
    base_trained_ = train != nullptr;
    base_fwd_us_ = med.fwd;
    base_bwd_us_ = med.bwd;
    base_upd_us_ = med.upd;
    base_row_bytes_ = table->bytes_read_per_row();
  }
  if (rows_ < g_.rows) {
    if (!out.note.empty()) out.note += "; ";
    out.note += "measured on " + std::to_string(rows_) + " of " + std::to_string(g_.rows) + " rows (scaled)";
  }
  return out;
}

}  // namespace edo::tuner
