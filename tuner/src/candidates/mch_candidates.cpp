#include "mch_candidates.h"

#include <algorithm>
#include <cmath>

#include "cache_replay.h"
#include "edo/stats/ordered_sample.h"

namespace edo::tuner {

using P = model::StrategyParams;

namespace {

// The policy's metadata (torchrec/modules/mc_modules.py, MCHEvictionPolicyMetadataInfo lists):
// int64 buffers per slot, and per history entry.
struct MchMetadata {
  uint32_t per_slot = 0, per_history_entry = 0;
};

MchMetadata mch_metadata_of(MchPolicy p) {
  switch (p) {
    case MchPolicy::kDistanceLfu: return {2, 1};  // counts (mch only), last_access_iter (mch and history)
    case MchPolicy::kLfu: return {1, 0};          // counts (mch only)
    case MchPolicy::kLru: return {1, 1};          // last_access_iter (mch and history)
  }
  return {};
}

// The ordered sample's references cut into steps: a reference at stream position p is in step
// floor((p - begin) / lookups per step). Exact when every step reads the same number of ids;
// otherwise the boundaries are the average step's (said in the candidate's params).
std::vector<std::vector<int64_t>> mch_steps_of(const stats::OrderedSample& s, double lookups_per_step) {
  std::vector<std::vector<int64_t>> steps;
  for (const auto& r : s.refs) {
    const auto k = static_cast<size_t>(std::floor(static_cast<double>(r.position - s.begin) / lookups_per_step));
    if (steps.size() <= k) steps.resize(k + 1);
    steps[k].push_back(static_cast<int64_t>(r.row));
  }
  return steps;
}

// Slots x eviction rounds one replay may walk (about a second on one core).
constexpr double kMchMaxSlotRounds = 5e7;

}  // namespace

uint64_t mch_module_bytes(uint64_t slots, MchPolicy policy, double first_batch_ids, uint32_t eviction_interval) {
  const MchMetadata m = mch_metadata_of(policy);
  // int(...) in Python truncates toward zero, as the cast does.
  const auto history = static_cast<uint64_t>(first_batch_ids * static_cast<double>(eviction_interval) * 1.25);
  return slots * 8 * (2 + m.per_slot) + history * 8 * (1 + m.per_history_entry) + 2 * 8;
}

std::string mch_not_offered(const TableGroup& g) {
  if (!g.budget_left_bytes) return "no budget";
  if (!g.dense_use.empty()) return "read whole by " + g.dense_use;
  if (!g.members.empty() || !g.identical.empty()) return "shares its weights with another table";
  if (!(g.lookups_per_step >= 1)) return "the recording counted no steps";
  if (g.rows == 0 || g.weight_bytes == 0) return "no rows";
  const double row_bytes = static_cast<double>(g.weight_bytes) / static_cast<double>(g.rows);
  const double distinct = static_cast<double>(std::min<uint64_t>(g.counts.unique_rows(), g.rows));
  if (distinct * row_bytes <= static_cast<double>(*g.budget_left_bytes)) return "its distinct ids fit in what the budget leaves it";
  return "";
}

void add_mch_candidates(const TableGroup& g, const SizeFn& size, std::vector<Candidate>& out) {
  if (out.empty() || !out.front().baseline || !mch_not_offered(g).empty()) return;
  std::string why_not = g.replay_skipped;
  const auto replay = why_not.empty() ? CacheReplay::of(g.counts, why_not) : std::nullopt;
  const stats::OrderedSample* s = g.counts.ordered_sample();
  if (!replay || !s) return;
  const uint64_t distinct = std::min<uint64_t>(g.counts.unique_rows(), g.rows);
  // N: the LRU sizes fitted on the earlier part (50-99 % hits there) and the knee of its curve,
  // below the distinct ids (a table of them all would collide on nothing: that is the plain
  // table, pruned).
  std::vector<uint64_t> sizes = replay->fitted_cache_rows(distinct);
  if (const uint64_t knee = replay->knee_cache_rows(distinct); knee > 0) sizes.push_back(knee);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  const double rate = replay->rate();
  const auto steps = mch_steps_of(*s, g.lookups_per_step);
  // Held out: the steps from the first step boundary at or after the cut.
  const auto score_from = static_cast<size_t>(std::ceil(static_cast<double>(replay->split() - s->begin) / g.lookups_per_step));
  if (score_from >= steps.size()) return;
  // The module sizes its history buffer on its first batch (mc_modules.py line 1198): the
  // replay starts at the first step the sample holds ids of.
  size_t first = 0;
  while (first < score_from && steps[first].empty()) ++first;
  const std::vector<std::vector<int64_t>> replayed(steps.begin() + static_cast<std::ptrdiff_t>(first), steps.end());
  const bool even = std::fmod(static_cast<double>(s->end - s->begin), g.lookups_per_step) == 0 &&
                    std::floor(g.lookups_per_step) == g.lookups_per_step;
  const Candidate base = out.front();  // a copy: out grows below (a reference would dangle)
  const double R = static_cast<double>(g.rows);
  const bool training = g.optimizer_bytes > 0 || g.grad_bytes > 0;
  for (uint64_t n : sizes) {
    if (n < 2 || n >= distinct) continue;
    MchConfig c;
    // A sample of rate r stands for the stream as in SHARDS: N slots are N * r on its ids.
    c.slots = std::max<uint64_t>(2, static_cast<uint64_t>(std::llround(static_cast<double>(n) * rate)));
    // Each eviction round re-sorts every slot (as the module does): a replay of many steps at
    // many slots would take seconds of the tune's set-up; such a size is not offered.
    if (static_cast<double>(replayed.size()) * static_cast<double>(c.slots) > kMchMaxSlotRounds) continue;
    c.eviction_interval = 1;  // torchrec's mc_adapter.py default (eviction_interval: int = 1)
    c.policy = MchPolicy::kDistanceLfu;
    const MchStats st = replay_mch(replayed, c, score_from - first);
    if (st.lookups == 0) continue;
    // own: lookups read from a row their id held before the step (trained for it); the rest
    // read the shared miss row (a collision: every id outside the slots shares it) or a row
    // just taken from another id.
    const double hit = st.hit_rate(), insert = st.insert_rate(), own = st.trained_row_rate();
    const double collision = static_cast<double>(st.miss_row_reads) / static_cast<double>(st.lookups);
    const uint64_t module = mch_module_bytes(n, c.policy, g.lookups_per_step, c.eviction_interval);
    Candidate m;
    model::StrategyParams& p = m.params;
    p.set(&P::slots, n).set(&P::policy, mch_policy_name(c.policy)).set(&P::eviction_interval, c.eviction_interval);
    p.set(&P::decay_exponent, c.decay_exponent).set(&P::hit_rate, hit).set(&P::insert_rate, insert).set(&P::collision_rate, collision);
    p.set(&P::eviction_rate, st.eviction_rate()).set(&P::own_row_rate, own).set(&P::module_bytes, module);
    p.set(&P::heldout, model::HeldOutReplay{CacheReplay::kFitFraction, rate, c.slots, st.steps, st.lookups});
    if (!even)
      p.set(&P::steps_approximated, "step boundaries every " + std::to_string(g.lookups_per_step) + " lookups (the recording's average step)");
    m.strategy = "mch";
    m.spec = base.spec;
    m.kernel = base.kernel;
    m.needs_retraining = true;  // the model is trained with the remap: its rows are slots, not ids
    m.level = 0;
    m.measure_as = 0;  // the rows are read as the baseline's (the remap's search is not timed)
    m.heldout_hit_rate = hit;
    m.held_out_error = 1.0 - own;
    m.validated = true;
    // N rows in the recorded format, the module's buffers, and the recorded optimizer state and
    // gradients sized to N rows.
    const FormatSize w = size(base.kernel, n, g.dim, 0);
    const double share = static_cast<double>(n) / R;
    m.device_bytes = w.device_bytes + module +
                     (training ? static_cast<uint64_t>(std::llround(static_cast<double>(g.optimizer_bytes + g.grad_bytes) * share)) : 0);
    m.host_bytes = w.host_bytes;
    out.push_back(std::move(m));
  }
}

}  // namespace edo::tuner
