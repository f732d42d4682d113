// The ordered samples of a few tables for a reader that loaded the rest without them
// (ProfileStore::load_for_viewing() drops them: most of a report's memory at many tables).
// `edo report` needs the token tables' order for their vocabulary coverage (issue 33 point 6);
// the dashboard replays each table's order once at load for its TorchRec facts, a table at a
// time (gui/model/src/recording_torchrec_facts.cpp).
#pragma once

#include <functional>
#include <memory>

#include "edo/db/profile_store.h"
#include "edo/model/profile.h"
#include "edo/stats/table_stats.h"

namespace SQLite {
class Statement;
}

namespace edo::db {

// Re-decodes the statistics, ordered sample included, of every table of `profile` (loaded from
// `store`) for which `want` is true. Throws std::runtime_error when a table's statistics do not
// decode (as load() would have).
void load_ordered_samples(const ProfileStore& store, model::Profile& profile, const std::function<bool(const model::Table&)>& want);

// The same for one table at a time: read(t) is table t's statistics, ordered sample included,
// decoded again (an empty aggregate when t has none stored). One prepared query for all reads;
// `store` must outlive the reader.
class TableStatisticsReader {
 public:
  explicit TableStatisticsReader(const ProfileStore& store);
  ~TableStatisticsReader();
  stats::TableAggregate read(const model::Table& t);

 private:
  std::unique_ptr<SQLite::Statement> query_;
};

}  // namespace edo::db
