// Every rank of a job side by side (issue 22, `edo report`'s "ranks", the dashboard's Ranks
// view): per rank its node, pid, lookups per table, peak memory, steps and time, and per table
// how unbalanced the ranks' lookups are (the busiest rank against the mean).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "edo/model/processes.h"
#include "edo/model/profile.h"

namespace edo::model {

struct RankView {
  int64_t rank = 0;
  std::optional<int64_t> world_size;
  std::optional<int64_t> local_rank;
  std::optional<int64_t> group_rank;  // the node's index (GROUP_RANK)
  std::string node;                   // the host name (EDO_HOSTNAME when set)
  int64_t pid = 0;                    // the rank's own process (its forked workers are counted with it)
  // Lookups per table, by the table's name in table_views() (so a table that differs per rank is
  // named as the report names it), summed over the rank's processes (forked workers included).
  std::map<std::string, uint64_t> lookups_by_table;
  uint64_t lookups = 0;               // all tables
  // The largest live device memory of any of the rank's processes (its memory timeline); the
  // sum of its tables' bytes when it has no timeline.
  int64_t peak_bytes = 0;
  bool peak_from_timeline = false;
  uint64_t steps = 0;
  int64_t duration_ns = 0;
  int64_t start_unix_ns = 0;
  size_t processes = 0;               // the rank's process and its forked workers
};

struct TableImbalance {
  std::string table;        // the table's name in table_views()
  size_t ranks = 0;         // ranks that read it
  int64_t busiest_rank = 0;
  uint64_t busiest = 0;     // that rank's lookups
  double mean = 0;          // lookups per rank, over the job's ranks (a rank that read none counts 0)
  double ratio = 0;         // busiest / mean (1 = balanced; 0 when nothing was read)
};

// One entry per distinct RANK (JobView::ranks order: by rank). `view_of_table` is what
// table_views(profile, {}, &view_of_table) returns (one name per profile.tables entry).
// `stored_lookups` (table id -> lookups), when given, stands in for the tables' aggregates (a
// viewer's outline, whose tables carry no statistics yet).
std::vector<RankView> rank_views(const Profile& profile, const JobView& job, const std::vector<std::string>& view_of_table,
                                 const std::map<int64_t, uint64_t>* stored_lookups = nullptr);

// Per table read by any rank (the job has at least two ranks), busiest first by ratio.
std::vector<TableImbalance> rank_imbalance(const std::vector<RankView>& ranks);

}  // namespace edo::model
