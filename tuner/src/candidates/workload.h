// What the tuner tunes: the recording's tables grouped by shared weights (a tied LM head is
// tuned with its embedding: one set of weights, one format, the lookups of both), with each
// group's access counts, lookups per step, memory as recorded and weight snapshot.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "edo/model/profile.h"
#include "edo/model/weights.h"
#include "edo/stats/table_stats.h"
#include "edo/tuner/llm_facts.h"

namespace edo::tuner {

struct TableGroup {
  std::string name;                      // the owner: the name registered first on the weights
  std::vector<std::string> members;      // the other names on the same weights
  // Members that are not tied but hold identical weights (same shape, dtype and snapshot
  // values): they may share the owner's weights (every candidate but the baseline does) or
  // stay apart as recorded (the baseline), holding these bytes of their own.
  std::vector<std::string> identical;
  uint64_t identical_bytes = 0;
  uint64_t rows = 0;
  uint32_t dim = 0;
  std::string dtype;                     // as recorded ("f32", "f16", "bf16", ...)
  uint64_t weight_bytes = 0;             // as recorded
  uint64_t optimizer_bytes = 0;          // optimizer state as recorded (all members)
  uint64_t grad_bytes = 0;               // gradients as recorded (all members)
  std::string optimizer;                 // "adam", "adagrad", ... ("" for an inference job)
  double lookups_per_step = 0;           // all members
  std::vector<std::pair<std::string, double>> lookups_by_name;  // owner first, then members
  stats::TableAggregate counts;          // merged over sessions and members
  stats::TableSummary summary;           // of `counts`
  // When its rows were first read, per stream: each session's table (ranks, processes, merged
  // files) and each tied member reads its own stream, whose segments do not line up with the
  // others'. An empty curve: a stream that cannot say (then no held-out split: held_out_of()).
  std::vector<model::FirstSeenCurve> first_seen;
  // Read whole by something other than its lookups (model::Table::dense_use of any member).
  std::string dense_use;
  // The job's optimizer hyperparameters (the first member's that has them), when recorded.
  std::optional<model::OptimizerParams> optimizer_params;
  const model::WeightSnapshot* snapshot = nullptr;  // the recording's weights, when usable
  bool tuned = true;                     // matches --tables
  // `edo tune --fine-tune`: the run is a fine-tune, so freezing the table is a candidate.
  bool fine_tune = false;
  // An untied LM head of the table's shape (the hooks' pytorch.lm_head note, llm_facts.h): its
  // module name and what it holds, which tying it to this table frees.
  std::string untied_head;
  uint64_t head_weight_bytes = 0, head_grad_bytes = 0, head_optimizer_bytes = 0;
  // A token table (the hooks noted an LM head for it, tied or untied): its head and its lookups'
  // activations per step, which the "trim vocabulary" candidate shrinks (trim_candidates.h).
  std::optional<LmHead> lm_head;
  std::optional<Activation> activation;
  // Set (to the reason) when the held-out replay of its recorded order is not run (the time
  // limit left no time for it): its offload hit rates are then the recorded curve's estimates.
  std::string replay_skipped;
  // What the tune's device budget (all devices) leaves this table when every other table keeps
  // its recorded bytes (0 when they take it all; unset: no budget). A managed-collision
  // candidate is offered only when the table's distinct ids would not fit in it (mch_candidates.h).
  std::optional<uint64_t> budget_left_bytes;

  uint64_t recorded_device_bytes() const { return weight_bytes + identical_bytes + optimizer_bytes + grad_bytes; }
};

struct Workload {
  std::vector<TableGroup> groups;        // largest first
  double steps = 0;                      // steps the lookups per step are relative to
  std::vector<std::string> notes;        // caveats (steps not recorded, snapshots not usable)
};

// Groups the profile's tables; `snapshots` must outlive the result. Tables whose name does not
// match `glob` are kept (their memory counts against the budget) with tuned = false.
Workload build_workload(const model::Profile& profile, const std::vector<model::WeightSnapshot>& snapshots,
                        const std::string& glob);

// The held-out split of a group's lookups (model::held_out_split at half of each stream): of
// its one stream, or summed over its streams, each scored alone. Every stream's fitted rows
// are kept, so the union of them loses at most that sum: an upper bound, never an
// underestimate. `valid` false when some stream cannot say.
model::HeldOut held_out_of(const TableGroup& g);

// The optimizer a table's extra-bytes kinds name ("adam.exp_avg" -> "adam"), or "".
std::string optimizer_of(const std::map<std::string, uint64_t>& extra_by_kind);

}  // namespace edo::tuner
