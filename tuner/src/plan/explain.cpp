// The words of a plan: what each candidate is and why the plan took it (each choice's `why`).
#include "explain.h"

#include <cmath>
#include <cstdio>

#include "edo/model/profile_summary.h"
#include "edo/text/duration.h"
#include "edo/tuner/optimizer.h"
#include "edo/tuner/summary.h"
#include "edo/tuner/tuner.h"

namespace edo::tuner {

static std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * x);
  return buf;
}

std::string number(double x, const char* fmt) {
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

// An offload candidate's hit rate and where it comes from: held out (replayed on the last 30 %
// of the recorded order, cache_replay.h) or estimated (the recording cannot replay it), with
// the whole recording's figure beside it.
// `modelled`: a modelled plan's hit rate is the one the model used, not a measurement.
std::string hit_rate_words(const model::TuneCandidate& c, bool modelled) {
  if (!c.hit_rate && !c.heldout_hit_rate) return "";
  const model::StrategyParams& p = c.params;
  std::string s;
  if (c.heldout_hit_rate) {
    s = ", hit rate " + percent(*c.heldout_hit_rate) + " held out (fitted on the first 70% of the lookups, replayed on the rest)";
  } else {
    const std::string why = p.hit_rate_estimated.value_or("");
    s = ", hit rate " + percent(*c.hit_rate) + (why.empty() ? (modelled ? " modelled" : " measured") : " (estimated: " + why + ")");
  }
  if (c.recorded_hit_rate) s += " (" + percent(*c.recorded_hit_rate) + " recorded)";
  // FBGEMM's cache under the algorithm the plan picks, and how far Belady's optimal replacement
  // is above it (cache_policies.h): what a better policy could still win at this size.
  if (p.policy_replays && p.cache_policy && p.policy_headroom) {
    const model::PolicyReplays& r = *p.policy_replays;
    const bool lfu = p.cache_policy == "lfu";
    const std::optional<double>& fbgemm = lfu ? r.fbgemm_lfu : r.fbgemm_lru;
    if (fbgemm && r.optimal)
      s += "; FBGEMM " + std::string(lfu ? "LFU" : "LRU") + " " + percent(*fbgemm) + " held out, policy headroom " +
           number(100.0 * *p.policy_headroom, "%.1f") + " points (optimal " + percent(*r.optimal) + ")";
  }
  return s;
}

// A trimmed vocabulary (trim_candidates.h): what it keeps, where the remap comes from, what the
// head and its softmax give back outside the tables, and what held-out data loses.
// The remap's command is marked in `reasons` (offsets in the returned text).
static std::string trim_vocab_text(const model::StrategyParams& p, uint64_t rows, std::vector<model::TuneReason>& reasons) {
  auto count = [](const std::optional<uint64_t>& v) { return v ? number(static_cast<double>(*v), "%.0f") : std::string("?"); };
  auto text = [](const std::optional<std::string>& v) { return v.value_or("?"); };
  auto bytes = [](const std::optional<uint64_t>& v) { return v ? model::format_bytes(*v) : std::string("?"); };
  const std::string cov = text(p.vocab_coverage);
  std::string s = ", vocabulary trimmed to the " + cov + " % set: keeps " + count(p.kept_rows) + " of " + number(static_cast<double>(rows), "%.0f") +
                  " token ids, the others read the UNK row (old id " + count(p.unk_old_id) + "; ";
  model::say(s, reasons, {.code = model::Reason::kVocabRemapExport, .name = cov});
  s += ")";
  const std::string kind = text(p.head_kind);
  if (kind == "untied")
    s += "; the untied head " + text(p.head) + " keeps the same rows (" + bytes(p.saved_head_bytes) +
         " of its weights, gradient and optimizer state freed outside the tables)";
  else if (kind == "tied")
    s += "; the tied head " + text(p.head) + " shrinks with the table";
  s += " and its softmax computes only the kept ids' logits (" + bytes(p.saved_logit_bytes_per_step) +
       " less of logits and their gradient per step); " + count(p.held_out_lost_lookups) + " of " + count(p.held_out_lookups) +
       " held-out lookups fall on dropped ids";
  return s;
}

// What the candidate is, in words.
std::string describe(const model::TuneCandidate& c, uint64_t rows, std::vector<model::TuneReason>& reasons) {
  const model::StrategyParams& p = c.params;
  auto get = [](const auto& v) -> double { return v ? static_cast<double>(*v) : 0.0; };
  std::string s;
  if (c.strategy == "offload") {
    const double k = get(p.cache_rows);
    s = "offload to host with a device cache of " + number(k, "%.0f") + " rows (" +
        number(100.0 * k / std::max<double>(1, static_cast<double>(rows)), "%.2g") + "% of rows, " +
        (p.policy == "static" ? "static hot set" : "LRU") + ")";
  } else if (c.strategy == "pq") {
    s = "product quantisation, " + number(get(p.m), "%.0f") + " sub-spaces";
  } else if (c.strategy == "lowrank") {
    s = "low rank " + number(get(p.rank), "%.0f");
    if (get(p.activation_bytes) > 0)
      s += " (its lookups' rows x " + number(get(p.rank), "%.0f") + " intermediate and gradient add " +
           model::format_bytes(*p.activation_bytes) + " per step, counted)";
  } else if (c.strategy == "multihash") {
    s = "multi-hash into " + number(get(p.buckets), "%.0f") + " buckets";
  } else if (c.strategy == "qr") {
    s = "quotient-remainder, " + number(get(p.m), "%.0f") + " rows per quotient";
  } else if (c.strategy == "mch") {
    // Managed collision (mch_candidates.h): the error is the held-out share of lookups read from
    // a row that is not their id's own (a miss reads the shared miss row, N-1): those lookups
    // train and read a row other ids share, the collisions a hashed table has on every id.
    s = "managed collision, " + number(get(p.slots), "%.0f") + " slots (TorchRec MCH, " + p.policy.value_or("?") +
        ", eviction every " + number(get(p.eviction_interval), "%.0f") + " steps): held out " + percent(get(p.hit_rate)) + " hits, " +
        percent(get(p.insert_rate)) + " inserts, " + percent(get(p.collision_rate)) + " collisions, " + percent(get(p.eviction_rate)) +
        " evictions; " + percent(get(p.own_row_rate)) + " of lookups read a row their id held before the step";
  } else if (c.strategy == "ssd") {
    // The SSD tier (ssd_candidates.h): both caches' sizes and the held-out two-level replay.
    s = "on the SSD behind a device cache of " + number(get(p.device_cache_rows), "%.0f") + " rows and a host cache of " +
        number(get(p.host_cache_rows), "%.0f") + " rows (LRU, as FBGEMM's SSD TBE): held out " + percent(get(p.device_hit_rate)) +
        " of lookups from the device cache, " + percent(get(p.host_hit_rate)) + " from the host cache, " +
        number(get(p.ssd_reads_per_step), "%.4g") + " SSD reads per step";
  } else if (c.strategy == "pruned") {
    s = "pruned to the " + number(get(p.kept_rows), "%.0f") + " rows read";
    if (p.held_out_lost_fraction)
      s += " (" + number(100.0 * *p.held_out_lost_fraction, "%.3g") +
           "% of the second half's lookups read rows the first half did not)";
  } else {
    s = c.strategy;
  }
  if (c.optimizer == "rowwise_adagrad") s += ", row-wise Adagrad with sparse gradients";
  if (c.optimizer == "sparse_adam") s += ", sparse gradient (nn.Embedding(sparse=True)) trained by SparseAdam";
  if (c.optimizer == "sparse_adagrad") s += ", sparse gradient (nn.Embedding(sparse=True)) trained by Adagrad";
  if (c.optimizer == "frozen") s += ", frozen for the fine-tune (no gradient, no optimizer state)";
  if (c.optimizer == "tie_head") {
    s += ", its untied LM head tied to it";
    if (p.head && p.saved_bytes)
      s += " (" + *p.head + "'s weights, gradient and optimizer state freed: " + number(get(p.saved_bytes), "%.0f") +
           " bytes outside the tables)";
  }
  if (c.optimizer == "trim_vocab") {
    std::vector<model::TuneReason> trim_reasons;
    const std::string trim = trim_vocab_text(p, rows, trim_reasons);
    for (model::TuneReason& reason : model::shifted(trim_reasons, static_cast<uint32_t>(s.size()))) reasons.push_back(reason);
    s += trim;
  }
  if (p.shared_by) {
    std::string names;
    for (const auto& n : *p.shared_by) names += (names.empty() ? "" : ", ") + n;
    s += ", one copy shared with " + names + " (same weights)";
  }
  return s;
}

// Why the plan took candidate `ci` for table `t`: what it is, what it saves and costs
// against the baseline, its error against the limit, and what kept the others out (faster
// ones need more memory than the budget leaves: the plan is the fastest that fits; the rest
// are over the error limit).
int64_t candidate_loss(const model::TuneCandidate& c, bool baseline) {
  return loss_units(std::isfinite(c.error) ? c.error : 0.0) + (c.needs_retraining ? loss_units(kRetrainingLoss) : 0) +
         (baseline ? 0 : 1);
}

// The start of a why: what the candidate is and what it saves and costs against the table's
// baseline (`base`), its error against the limit; the reasons it names marked in `reasons`.
static std::string change_text(const model::TuneCandidate& c, const model::TuneCandidate* base, const model::TuneTable& t,
                               double max_error, std::vector<model::TuneReason>& reasons) {
  const std::string limit = std::isfinite(max_error) ? " (limit " + number(max_error, "%g") + ")" : "";
  if (!base || &c == base) return "kept as recorded (" + c.strategy + ")" + (limit.empty() ? "" : ", error " + number(c.error, "%.3g") + limit);
  std::string s = describe(c, t.rows, reasons) + ": ";
  const double saved = static_cast<double>(base->device_bytes) - static_cast<double>(c.device_bytes);
  s += saved >= 0 ? "saves " + model::format_bytes(static_cast<uint64_t>(saved)) : "adds " + model::format_bytes(static_cast<uint64_t>(-saved));
  if (base->device_bytes > 0) s += " (" + percent(std::fabs(saved) / static_cast<double>(base->device_bytes)) + ")";
  const double dt = c.step_us - base->step_us;
  s += ", step time " + format_duration_us(dt, true);
  if (base->step_us > 0) s += " (" + number(100.0 * dt / base->step_us, "%+.0f") + "%)";
  s += ", error " + error_text(c);
  if (c.validated) return s + limit;
  s += " (its loss was not measured on held-out lookups; ";
  model::say(s, reasons, {.code = model::Reason::kTakenUnvalidated});
  return s + ")";
}

std::string why_of(const model::TuneResult& r, size_t ci, const model::TuneCandidate* base, const model::TuneTable& t,
                   double max_error, const std::vector<size_t>& of_table, const ExtraLoss& extra,
                   std::vector<model::TuneReason>& reasons) {
  const model::TuneCandidate& c = r.candidates[ci];
  auto extra_of = [&](size_t i) {
    auto it = extra.find(i);
    return it == extra.end() ? int64_t{0} : it->second;
  };
  std::string s = change_text(c, base, t, max_error, reasons);
  const bool modelled = r.timing_kind == model::RunTiming::kModelled;
  s += hit_rate_words(c, modelled);
  if (c.needs_retraining) s += "; needs retraining";
  if (c.timing_kind == model::TimingKind::kPredicted) s += "; time predicted from " + c.timing_from + " (its class's measured representative)";
  else if (c.timing_kind == model::TimingKind::kTwin) s += "; timed as " + c.timing_from + " (same shape and access counts)";
  if (!c.step_covers.empty()) s += "; step time: " + c.step_covers;
  const bool least_change = r.objective == model::Objective::kLeastChange;
  const bool is_base = !base || &c == base;
  const int64_t loss = candidate_loss(c, is_base) + extra_of(ci);
  size_t better = 0, over = 0;  // better: faster (speed), or losing less (least change)
  size_t rejected = 0, unvalidated = 0;  // never offered: numerically unsafe, or loss not measured on held-out lookups
  const model::TuneCandidate* closest = nullptr;  // over the limit, least error
  for (size_t oi : of_table) {
    const model::TuneCandidate& o = r.candidates[oi];
    if (o.table != c.table || &o == &c) continue;
    if (!std::isnan(o.error) && o.error > max_error) {
      ++over;
      if (!closest || o.error < closest->error) closest = &o;
    } else if (o.plannable(r.allow_unvalidated) &&
               (least_change ? candidate_loss(o, &o == base) + extra_of(oi) < loss : o.step_us < c.step_us)) {
      ++better;
    } else if (o.usable() && !o.rejected.empty()) {
      ++rejected;
    } else if (o.usable() && !o.plannable(r.allow_unvalidated)) {
      ++unvalidated;
    }
  }
  if (least_change) {
    if (better) s += "; " + std::to_string(better) + " that change less need more memory than the budget leaves";
    else if (is_base) s += ": fits the budget, nothing needs to change";
    else s += "; the least change that fits";
  } else if (better) {
    s += "; " + std::to_string(better) + " faster need more memory than the budget leaves";
  } else if (is_base) {
    s += modelled ? ": the fastest modelled" : ": the fastest measured";
  } else {
    s += std::string(modelled ? "; the fastest modelled" : "; the fastest measured") +
         (over ? " within the error limit" : "");
  }
  // Offload against the formats that fit (plan.cpp charge_slow_offloads): say which way it went.
  const model::TuneCandidate* slow_offload = nullptr;  // the fastest charged offload of the table
  for (size_t oi : of_table)
    if (extra_of(oi) > 0 && (!slow_offload || r.candidates[oi].step_us < slow_offload->step_us)) slow_offload = &r.candidates[oi];
  if (extra_of(ci) > 0) {
    s += "; it slows the step, so a format of negligible error (below " + number(kNegligibleError, "%g") +
         ") that is no slower would have been taken before it: none fits the budget";
  } else if (slow_offload && !is_base && c.strategy != "offload" && std::isfinite(c.error) && c.error < kNegligibleError) {
    s += "; taken before offloading (no error, but its misses over the host link add " +
         (base ? format_duration_us(slow_offload->step_us - base->step_us, true) : std::string("time")) +
         " to the step): an error below " + number(kNegligibleError, "%g") + " is negligible and this ranks no slower";
  }
  if (over)
    s += "; " + std::to_string(over) + " over the error limit (closest: " + closest->strategy + ", error " +
         number(closest->error, "%.3g") + ")";
  if (rejected) {
    const model::TuneCandidate* first = nullptr;
    for (size_t oi : of_table)
      if (const model::TuneCandidate& o = r.candidates[oi]; o.table == c.table && o.usable() && !o.rejected.empty()) {
        first = &o;
        break;
      }
    s += "; " + std::to_string(rejected) + " rejected as unsafe for the job's training (" + first->strategy + ": " + first->rejected + ")";
  }
  if (unvalidated) {
    s += "; " + std::to_string(unvalidated) + " not validated on held-out lookups, not chosen (";
    model::say(s, reasons, {.code = model::Reason::kAllowUnvalidated});
    s += ")";
  }
  if (!t.dense_use.empty())
    s += "; read whole every step (" + t.dense_use + "): kept in its recorded format (that reader reads the weight as it "
         "is), never offloaded, pruned, hashed or converted";
  return s;
}

}  // namespace edo::tuner
