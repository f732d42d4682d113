// The read-side view of a profile that report, diff and the dashboard share: one entry per
// table name with its headline statistics. Tables of the same name recorded by several
// processes (torchrun ranks, DataLoader workers) are merged when their shapes agree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "edo/model/profile.h"
#include "edo/stats/union_lru.h"

namespace edo::model {

struct TableView {
  std::string name;          // unique among the views: the table's name, or "name (rank 1)" when
                             // processes recorded different tables under one name
  std::string table_name;    // the name as recorded
  uint64_t rows = 0;
  uint32_t dim = 0;
  std::string dtype;
  std::string device;
  uint64_t weight_bytes = 0;     // the weights (rows * dim * element size)
  uint64_t optimizer_bytes = 0;  // optimizer state
  uint64_t grad_bytes = 0;       // gradients
  int sessions = 0;              // how many processes recorded it
  std::set<int64_t> ranks;       // the RANKs of those processes (empty: none had one)
  stats::TableAggregate aggregate;  // merged over sessions
  stats::TableSummary summary;
  // Read on several ranks: the LRU curve of one cache serving the union of their lookups
  // (model parallel; summary's is each rank with its own cache: data parallel). Filled by
  // add_union_lru() (edo/model/union_view.h) for the readers that show it (report, dashboard);
  // nullopt when fewer than two ranks read the table, or when not asked for.
  std::optional<stats::UnionLru> union_lru;
  std::vector<std::string> tied_with;  // other names on the same weights
  // Set when this name was registered on weights that an earlier name already owns (e.g. an
  // LM head tied to the input embedding): its bytes are that table's, not extra memory.
  std::string shares_weights_of;
  // The job's optimizer for it and what read it whole (Table's fields; from the first process
  // that recorded them).
  std::optional<OptimizerParams> optimizer_params;
  std::string dense_use;

  // The memory this table adds: weights + optimizer state + gradients, except that the
  // weights of a table that shares another's (shares_weights_of) are counted with that one.
  uint64_t total_bytes() const {
    return saturating_add(saturating_add(shares_weights_of.empty() ? weight_bytes : 0, optimizer_bytes), grad_bytes);
  }
};

// Tables sorted by total_bytes (descending; a table that shares another's weights right after
// it), then by name in natural order.
std::vector<TableView> table_views(const Profile& profile);
// The same, calling on_table(done, total) after each table's statistics are summarised (a
// viewer's progress bar); on_table may throw to abandon the work.
// view_of_table, when given, receives the name of the view each of profile.tables went into.
// detail kHeadline: each view's summary holds summarize()'s headline numbers alone
// (stats::summarize_headline(): no curves, Zipf fit or drift), for readers that show only those.
enum class SummaryDetail { kFull, kHeadline };
std::vector<TableView> table_views(const Profile& profile,
                                   const std::function<void(size_t done, size_t total)>& on_table,
                                   std::vector<std::string>* view_of_table = nullptr,
                                   SummaryDetail detail = SummaryDetail::kFull);

// Natural order: digit runs compare as numbers ("table_2" < "table_10").
bool natural_less(std::string_view a, std::string_view b);

// Human-readable byte count: "1.50 GiB", "512 B".
std::string format_bytes(uint64_t bytes);

}  // namespace edo::model
