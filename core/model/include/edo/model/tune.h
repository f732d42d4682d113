// What `edo tune` measured and recommended (docs/tuning.md): every candidate strategy of
// every table, the plan under a memory budget, the Pareto frontier and the machine. The tuner
// (tuner/) fills it, db/ stores it (tune_store.h), report, export and the dashboard read it.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "edo/model/strategy_params.h"
#include "edo/model/tune_reasons.h"
#include "edo/model/tune_vocabulary.h"

namespace edo::model {

// One strategy for one table. Tables that share weights (ties) are tuned as one group: the
// candidate belongs to the group's owner (the name registered first) and covers the lookups
// of every member.
struct TuneCandidate {
  int64_t id = 0;              // assigned by the store
  std::string table;           // the table (group owner) it is for
  std::string strategy;        // "fp32", "int8", "pq", "offload", ...
  std::string spec;            // the kernels' strategy spec, e.g. "offload:cache=0.05:policy=lru"
  StrategyParams params;       // the strategy's parameters, typed (stored and exported as a JSON object)
  // Training jobs: the optimizer the candidate assumes: "" for an inference job or the
  // recorded optimizer kept, "rowwise_adagrad" for the optimizer-state lever.
  std::string optimizer;
  uint64_t device_bytes = 0;   // weights + optimizer state + metadata on the device (exact)
  uint64_t host_bytes = 0;     // host memory the format needs (offload; ssd: the host cache)
  uint64_t ssd_bytes = 0;      // storage the format needs (ssd: the whole table on the SSD)
  double step_us = std::numeric_limits<double>::quiet_NaN();  // lookup time per step (NaN: not measured)
  // The interval the step time's repetitions spread over (interleaved with the baseline's: the
  // range of their ratios times the baseline's time); NaN when unknown. Candidates of one
  // table within each other's interval are ties to the plan (broken by loss, then bytes).
  double step_us_lo = std::numeric_limits<double>::quiet_NaN();
  double step_us_hi = std::numeric_limits<double>::quiet_NaN();
  double error = std::numeric_limits<double>::quiet_NaN();    // frequency-weighted relative L2 error
  // What step_us covers (issue 19 point 4): "forward pooled bag" (inference), "forward+backward+
  // adam update (dense gradient)" (training, timed on the backend), or a forward measured with
  // the backward and update modelled; "" in runs made before it was recorded. Its phases
  // (NaN: not split; they add up to step_us).
  std::string step_covers;
  double forward_us = std::numeric_limits<double>::quiet_NaN();
  double backward_us = std::numeric_limits<double>::quiet_NaN();
  double update_us = std::numeric_limits<double>::quiet_NaN();
  std::optional<double> hit_rate;           // offload: hit rate measured on the backend
  std::optional<double> recorded_hit_rate;  // offload: the recording's curve at that cache size
  // Offload: replayed on the held-out part of the recorded order (fitted on the first 70 % of
  // the lookups, scored on the rest: tuner/src/replay/cache_replay.h). When set, hit_rate is this.
  std::optional<double> heldout_hit_rate;
  bool needs_retraining = false;
  bool measured = false;       // step_us was measured in this run
  uint64_t measured_rows = 0;  // rows the time was measured on (< the table's rows: scaled rule)
  std::string note;            // how it was measured, or why it was not
  // Where step_us comes from (issue 19 point 8, docs/tuning.md "Representatives"):
  // measured on this table; twin: timed on `timing_from`, a table of the same shape, dtype and
  // access counts; predicted: `timing_from`'s per-lookup time (the representative of this
  // table's class) times this table's lookups per step; kNone when not timed (or a run stored
  // before this was recorded).
  TimingKind timing_kind = TimingKind::kNone;
  std::string timing_from;
  // False for a candidate that drops or merges rows by what it was fitted on (pruning) whose
  // loss could not be measured on held-out lookups: its error is not a measurement (never
  // shown as 0), and the plan takes it only when asked to (TuneResult::allow_unvalidated).
  bool validated = true;
  // Why the candidate is never offered, although measured (docs/tuning.md "Numerical safety"):
  // e.g. the job's own optimizer, simulated in the candidate's storage format, made a row
  // non-finite. "" when it may be offered.
  std::string rejected;
  // Why it has no step time, for the run that made it (not stored: a stored run's note says
  // it in words; kNone in a loaded run).
  NotTimedCause not_timed = NotTimedCause::kNone;
  // What `rejected` is about (kNone in a run stored before schema 18, whose text says it).
  RejectionCause rejection = RejectionCause::kNone;
  // The reasons marked in `note` (edo/model/tune_reasons.h): what a front end words its own way.
  std::vector<TuneReason> note_reasons{};

  bool usable() const { return measured && std::isfinite(step_us) && !std::isnan(error); }
  // What the plan may take (beside the error limit): measured, not rejected, and validated
  // unless unvalidated candidates were allowed.
  bool plannable(bool allow_unvalidated) const { return usable() && rejected.empty() && (validated || allow_unvalidated); }
};

// The memory tier that holds a candidate's table (derived, never stored): "ssd" (the table on
// storage behind a device cache and a host cache, strategy "ssd"), "host" (the table in host
// memory behind a device cache, strategy "offload") or "device" (every other format).
inline std::string_view tier_of(const TuneCandidate& c) {
  if (c.strategy == "ssd") return "ssd";
  if (c.strategy == "offload") return "host";
  return "device";
}

// One piece of a table placed on one device of a plan over N devices (`edo tune --devices N`,
// docs/tuning.md "Placement"): the whole table (table-wise), a contiguous range of its rows
// (row-wise) or of its columns (column-wise). Its bytes are the table's device bytes (weights,
// optimizer state, cache) in proportion to the range; its lookups per step likewise (row-wise
// assumes the table's lookups spread over its rows in proportion; a column-wise shard serves
// every lookup at offset..offset+size columns of the width: its share counts size/dim of each).
struct TuneShard {
  uint32_t device = 0;
  uint64_t offset = 0;         // first row (row-wise) or column (column-wise); 0 for table-wise
  uint64_t size = 0;           // rows (row-wise, table-wise) or columns (column-wise)
  uint64_t device_bytes = 0;
  double lookups_per_step = 0;
};

// The plan's choice for one table.
struct TuneChoice {
  std::string table;
  int64_t candidate = -1;      // index into TuneResult::candidates; -1: the table was not tuned
  std::string shares_with;     // a tied table: the group owner whose format it follows
  uint64_t device_bytes = 0;   // this table's part (0 for a tied member: the owner holds the weights)
  uint64_t host_bytes = 0;
  double step_us = 0;          // this table's part of the group's step time
  std::string why;             // one line: what it saves and costs, or why it is kept
  // Plans over several devices (TuneResult::devices > 1): "table_wise", "row_wise" or
  // "column_wise" and the shards (a tied table follows its owner: its shards hold no bytes);
  // "" and none in a single-device plan.
  std::string sharding;
  std::vector<TuneShard> shards;
  // Beside device_bytes and host_bytes (last, so that brace-initialised choices keep their
  // meaning): the table's bytes on the SSD (the ssd tier: the whole table; else 0).
  uint64_t ssd_bytes = 0;
  // The reasons marked in `why` (edo/model/tune_reasons.h).
  std::vector<TuneReason> why_reasons{};
};

// One recorded table as the tuner saw it (baseline).
struct TuneTable {
  std::string name;
  uint64_t rows = 0;
  uint32_t dim = 0;
  std::string dtype;
  uint64_t device_bytes = 0;   // as recorded: weights + optimizer state
  double lookups_per_step = 0;
  bool tuned = true;           // false: outside --tables (kept as recorded, time not measured)
  std::string shares_with;     // tied to this owner
  std::string weights;         // "recorded" or "synthetic"
  // The optimizer whose state the recording saw ("adam", "adagrad", ... from the state's kind);
  // "" when none was recorded: an inference table, or one trained by plain SGD (no state).
  std::string optimizer;
  // Gradients or optimizer state were recorded: the job trains this table (with plain SGD
  // when `optimizer` is ""). Plans and runs saved before it was kept read it back as "an
  // optimizer was recorded" (plan import, schema step 13).
  bool training = false;
  // The weight is also read whole every step (a tied LM head: model::Table::dense_use says
  // what was seen): never offloaded, pruned or hashed. "" when not seen.
  std::string dense_use;
};

struct TuneResult {
  int64_t run_id = 0;          // assigned by the store
  int64_t created_unix = 0;
  // The machine the candidates were measured on: a CPU-made plan is never mistaken for a GPU
  // measurement.
  std::string backend;         // "cpu" or "cuda"
  std::string device;          // CPU model or GPU name
  std::string weights;         // "recorded" (a weight snapshot for every tuned table) or "synthetic"
  // How every step time of the plan was obtained, never mixed: measured on timing_device
  // (this machine's backend, as `device` describes it) or modelled for timing_device (a GPU
  // that is not here: edo/tuner/device_model.h), errors still computed on `backend`.
  RunTiming timing_kind = RunTiming::kMeasured;
  std::string timing_device;
  // Options in force. budget_bytes is per device: a plan over `devices` devices holds at most
  // budget_bytes on each; its plan_device_bytes and frontier are totals over all devices, its
  // min_feasible_bytes is per device like the budget.
  uint32_t devices = 1;
  uint64_t budget_bytes = 0;
  // The other tiers' budgets (`edo tune --host-budget`, `--ssd-budget`), totals over the plan;
  // 0: no limit (every plan before tiers were recorded).
  uint64_t host_budget_bytes = 0;
  uint64_t ssd_budget_bytes = 0;
  double max_error = std::numeric_limits<double>::infinity();
  std::string tables_glob = "*";
  uint64_t seed = 0;
  double time_limit_s = 0;     // 0: none
  // What the plan optimises: least change (the least loss that fits the budget, then the
  // fastest) or speed (the fastest within the error limit; every plan before objectives were
  // recorded).
  Objective objective = Objective::kSpeed;
  // Candidates whose loss was not measured on held-out lookups may be chosen (`edo tune
  // --allow-unvalidated`); by default they are not (TuneCandidate::validated).
  bool allow_unvalidated = false;
  // `edo tune --fine-tune`: the user said the run is a fine-tune, so a table may be frozen
  // (candidate optimizer "frozen"). Older runs and plans: false.
  bool fine_tune = false;
  // How it went.
  double elapsed_s = 0;
  bool complete = true;        // false: stopped (time limit, Ctrl-C) before every candidate was measured
  StopReason stop_reason = StopReason::kNone;
  uint64_t candidates_total = 0;
  uint64_t candidates_measured = 0;
  // Caveats a reader must know (synthetic weights, steps not recorded, modelled transfers...).
  std::vector<std::string> notes;
  // The reasons marked in the notes (TuneReason::line: which note).
  std::vector<TuneReason> note_reasons{};

  std::vector<TuneTable> tables;
  std::vector<TuneCandidate> candidates;

  // The plan (empty choices when infeasible).
  bool feasible = false;
  uint64_t min_feasible_bytes = 0;  // the smallest (per-device) budget any plan fits (under the error limit)
  uint64_t baseline_device_bytes = 0;
  uint64_t baseline_host_bytes = 0;
  double baseline_step_us = 0;
  uint64_t plan_device_bytes = 0;
  uint64_t plan_host_bytes = 0;
  uint64_t plan_ssd_bytes = 0;
  double plan_step_us = 0;
  std::vector<TuneChoice> choices;
  // Non-dominated (device bytes, step us) pairs of whole plans, bytes ascending.
  std::vector<std::pair<uint64_t, double>> frontier;

  // The tuned table called `name`, or nullptr. Constant time: plans of 10,000s of tables ask
  // once per choice and per candidate (export, report, the dashboard's cells).
  const TuneTable* table_named(const std::string& name) const { return table_index_.find(tables, name); }

  // A name -> position index of `tables`, built at first use. A hit is checked against the
  // table's name and a miss scans (and rebuilds), so an index that a later change to `tables`
  // left stale is never wrong, only rebuilt. Copies start without one. Safe to use from several
  // threads at once (the dashboard's models read one result).
  class TableIndex {
   public:
    TableIndex() = default;
    TableIndex(const TableIndex&) {}
    TableIndex& operator=(const TableIndex&) {
      map_.store(nullptr);
      return *this;
    }
    const TuneTable* find(const std::vector<TuneTable>& tables, const std::string& name) const {
      const std::shared_ptr<const Map> m = map_.load();
      if (m) {
        auto it = m->find(name);
        if (it != m->end() && it->second < tables.size() && tables[it->second].name == name) return &tables[it->second];
      }
      const TuneTable* found = nullptr;
      for (const auto& t : tables)
        if (t.name == name) {
          found = &t;
          break;
        }
      if (found || !m || m->size() != tables.size()) {
        auto fresh = std::make_shared<Map>();
        fresh->reserve(tables.size());
        for (size_t i = 0; i < tables.size(); ++i) fresh->emplace(tables[i].name, i);  // the first of a name wins
        map_.store(std::move(fresh));
      }
      return found;
    }

   private:
    using Map = std::unordered_map<std::string, size_t>;
    mutable std::atomic<std::shared_ptr<const Map>> map_;
  };
  TableIndex table_index_;
};

}  // namespace edo::model
