// The in-memory shape of one recording (.edodb file): what `edo synth`, the collector
// (`edo record` / `edo import`) build, and what report/diff/tune/dashboard read back.
// db/profile_store.h writes and reads it to and from SQLite.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "edo/model/first_seen.h"
#include "edo/model/rank_identity.h"
#include "edo/model/weights.h"
#include "edo/stats/table_stats.h"

namespace edo::model {

// a + b, or the largest uint64_t when that overflows (sizes read from a damaged file).
inline uint64_t saturating_add(uint64_t a, uint64_t b) { return a + b < a ? ~uint64_t{0} : a + b; }

// One step's loss (Session::losses).
struct StepLoss {
  uint64_t step = 0;
  double loss = 0;
};

// The job's optimizer for one table, as its param_groups said (the PyTorch hooks' "pytorch.optimizer"
// note). Values the optimizer does not have stay at 0 (e.g. betas of Adagrad).
struct OptimizerParams {
  std::string kind;                   // torch class name, lower case: "adam", "adamw", "adagrad", "sgd", "sparseadam", "rmsprop", ...
  double lr = 0;
  double eps = 0;
  double weight_decay = 0;
  double beta1 = 0, beta2 = 0;        // adam, adamw, sparseadam
  double momentum = 0;                // sgd, rmsprop
  double initial_accumulator_value = 0;  // adagrad
  bool maximize = false;
};

// One traced process (or one `edo synth` run).
struct Session {
  int64_t id = 0;               // assigned by the store; 0 = not yet stored
  std::string command;          // the job's command line, space-joined
  std::string host;
  int64_t pid = 0;
  int64_t parent_pid = 0;
  std::optional<int64_t> rank;        // RANK, when set
  std::optional<int64_t> local_rank;  // LOCAL_RANK, when set
  int64_t start_unix_ns = 0;
  int64_t duration_ns = 0;
  std::optional<int> exit_code;       // the job's exit code (128+signal when killed)
  std::string gpus;                   // free text: device names, comma-separated
  std::string source;                 // "synth", "record", "import"
  uint64_t dropped_events = 0;        // events the tracer had to drop (bounded memory)
  std::map<std::string, uint64_t> drops;  // every loss counter by name (edo/model/drops.h)
  uint64_t steps = 0;                 // edo_step() calls
  RankIdentity identity;              // the job and node this process belongs to (rank_identity.h)
  // The training loss per step: the scalar the job called backward() on, read by the PyTorch
  // hooks without a device synchronisation (the "pytorch.loss" notes, docs/database.md). `step` is
  // the session's step count when backward() ran (0 before the first step mark). Non-finite
  // losses are kept as they are (NaN, +-inf). Empty when the job had no loss to see.
  std::vector<StepLoss> losses;
};

// One embedding table seen in a session.
struct Table {
  int64_t id = 0;                     // assigned by the store
  int64_t session_id = 0;
  std::string name;
  uint64_t rows = 0;
  uint32_t dim = 0;
  std::string dtype;                  // edo/dtype.h's names: "fp32", "fp16", "bf16", "int8", "uint8", "fp8_e4m3"
  std::string device;                 // "host" or "cuda" (optionally "cuda:N")
  uint64_t base_address = 0;
  // Memory of the table, in three named parts (one definition everywhere: model, database,
  // report, diff). Extra memory reported by kind (edo_table_set_extra_bytes) is split with
  // is_gradient_kind().
  uint64_t weight_bytes = 0;          // the weights: rows * dim * element size
  uint64_t optimizer_bytes = 0;       // optimizer state (Adam moments, Adagrad sums, ...)
  uint64_t grad_bytes = 0;            // gradients of the weights
  uint64_t total_bytes() const { return saturating_add(saturating_add(weight_bytes, optimizer_bytes), grad_bytes); }
  std::map<std::string, uint64_t> extra_by_kind;  // the extra bytes as reported, by kind ("adam.exp_avg", "grad", ...)
  stats::TableAggregate aggregate;    // counts, sketches, stack distances, drift windows
  // When rows were first read (first_seen.h): the held-out validation of what the tuner fits
  // to the access stream. Empty when unknown.
  FirstSeenCurve first_seen;
  // The job's optimizer and its hyperparameters for this table (unset: not recorded, e.g. a
  // C job or an older recording; then only extra_by_kind says which optimizer it was).
  std::optional<OptimizerParams> optimizer_params;
  // The weight is also read whole by something other than its lookups (a tied LM head through
  // F.linear / matmul, any op reading the full weight): what the hooks saw, e.g. "the gradient
  // reached 50257 of 50257 rows in a step whose lookups read 812" ("" when not seen). Such a
  // table is never offloaded, pruned or hashed (docs/tuning.md).
  std::string dense_use;  // the "pytorch.dense_use" note
};

// The kinds of extra memory a tracer reports per table: "grad" (or "grad.<anything>") is a
// gradient; every other kind ("adam.exp_avg", "adagrad.sum", ...) is optimizer state.
bool is_gradient_kind(const std::string& kind);

// Two table names sharing one base pointer (tied / shared weights).
struct Tie {
  int64_t session_id = 0;
  std::string table;                  // the name registered first
  std::string tied_with;              // a later name on the same base pointer
};

// One device allocation or free (memory timeline).
struct MemoryEvent {
  int64_t session_id = 0;
  int64_t time_ns = 0;                // since session start
  int64_t bytes = 0;                  // > 0 allocation, < 0 free
  uint64_t address = 0;
  uint64_t stream = 0;
  int32_t device = 0;
  std::string kind;                   // "cudaMalloc", "cuMemAlloc", "cudaMallocAsync", "cuMemMap", ...
  std::string table;                  // attributed table name, or "" for other
};

// Launches of a kernel whose pointer arguments point into one table, and their GPU time.
struct KernelTableStat {
  std::string table;
  uint64_t launches = 0;
  uint64_t total_ns = 0;              // a launch that reads two tables counts for both
};

// Per-kernel totals.
struct KernelStat {
  int64_t session_id = 0;
  std::string name;
  uint64_t launches = 0;
  uint64_t total_ns = 0;
  std::vector<std::string> tables;    // tables whose memory its pointer arguments point into
  std::vector<KernelTableStat> per_table;
};

// Per-NVTX-range totals (name = "domain::range" or "range" in the default domain).
struct RangeStat {
  int64_t session_id = 0;
  std::string name;
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t lookups = 0;               // lookups attributed to the range (innermost range)
  uint64_t alloc_bytes = 0;           // bytes allocated inside the range
};

// Sums of Table's memory parts.
struct TableMemory {
  uint64_t weight_bytes = 0;
  uint64_t optimizer_bytes = 0;
  uint64_t grad_bytes = 0;
  uint64_t total_bytes() const { return saturating_add(saturating_add(weight_bytes, optimizer_bytes), grad_bytes); }
};

struct Profile {
  std::vector<Session> sessions;
  std::vector<Table> tables;
  std::vector<Tie> ties;
  std::vector<MemoryEvent> memory_events;
  std::vector<KernelStat> kernels;
  std::vector<RangeStat> ranges;
  // Weight snapshots (`edo record --weights`). ProfileStore::load() leaves this empty (they are
  // large): read them with db::load_weight_snapshots().
  std::vector<WeightSnapshot> weights;
  // Free-form key/value facts about the recording (tool version, EDO_* settings in force).
  std::map<std::string, std::string> metadata;

  uint64_t dropped_events() const;
  // Every loss counter summed over the sessions (edo/model/drops.h).
  std::map<std::string, uint64_t> drops() const;
  // Peak of the running sum of memory_events per session, maxed over sessions; when there is
  // no timeline, the sum of table bytes.
  int64_t peak_bytes() const;
  // edo's own device memory (the tracer's cuMemAlloc: device counters and sample arenas, outside
  // the job's allocator), summed over the processes: their "session.<id>.edo.device_bytes"
  // notes (the last value each noted). Pinned host memory: edo_pinned_bytes().
  uint64_t edo_device_bytes() const;
  uint64_t edo_pinned_bytes() const;
  // Table memory summed over every process, in the three parts of Table: a tied table's
  // weights are counted once (with the table named first), and so is a table that forked
  // workers inherited (see same_table_as() in processes.h).
  TableMemory table_memory() const;
  uint64_t table_bytes() const { return table_memory().total_bytes(); }
};

// Bytes per element of a dtype name; 0 for an unknown name.
uint32_t dtype_size(const std::string& dtype);

}  // namespace edo::model
