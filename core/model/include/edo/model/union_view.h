// The model-parallel LRU curve of a table read on several ranks (issue 22): which processes'
// streams of the table go into the union (edo/stats/union_lru.h computes it), and why there is
// none when a rank's lookups are not one process's stream.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "edo/model/profile.h"
#include "edo/model/profile_summary.h"
#include "edo/stats/union_lru.h"

namespace edo::model {

// The union LRU curve of the tables `members` (indices into profile.tables: one table read by
// several processes, merged into `merged`). nullopt when fewer than two ranks read it (there is
// no union apart from the per-rank curve). Not available, saying why, when a process without
// RANK read it too, or when a rank's lookups of it come from more than one process (forked
// workers: not one stream's order); else each rank's ordered sample, ranks ascending.
std::optional<stats::UnionLru> union_lru_of(const Profile& profile, const std::vector<size_t>& members,
                                            const stats::TableAggregate& merged);

// Fills TableView::union_lru of every view that two or more ranks read. `view_of_table` is
// what table_views(profile, {}, &view_of_table) returned with `views` (the view each of
// profile.tables went into). Apart from table_views() because it costs a pass over every
// rank's ordered sample (~0.5 s per table of 64 ranks on a loaded 2-core VM: bench/results), which the
// readers that do not show it (the tuner, the collector's table count) do not pay.
void add_union_lru(const Profile& profile, std::vector<TableView>& views, const std::vector<std::string>& view_of_table);

}  // namespace edo::model
