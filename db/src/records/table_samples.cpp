#include "edo/db/table_samples.h"

#include <SQLiteCpp/SQLiteCpp.h>

#include <stdexcept>
#include <string_view>

namespace edo::db {

TableStatisticsReader::TableStatisticsReader(const ProfileStore& store)
    : query_(std::make_unique<SQLite::Statement>(store.database(), "SELECT aggregate FROM table_stats WHERE table_id = :table_id")) {}

TableStatisticsReader::~TableStatisticsReader() = default;

stats::TableAggregate TableStatisticsReader::read(const model::Table& t) {
  stats::TableAggregate agg;
  if (t.id == 0) return agg;
  query_->reset();
  query_->bind(":table_id", static_cast<int64_t>(t.id));
  if (!query_->executeStep() || query_->getColumn("aggregate").isNull()) return agg;
  SQLite::Column blob = query_->getColumn("aggregate");
  std::string_view bytes(static_cast<const char*>(blob.getBlob()), static_cast<size_t>(blob.getBytes()));
  if (!stats::TableAggregate::deserialize_lazily(bytes, agg, true))
    throw std::runtime_error("statistics of table '" + t.name + "' do not decode");
  return agg;
}

void load_ordered_samples(const ProfileStore& store, model::Profile& profile, const std::function<bool(const model::Table&)>& want) {
  TableStatisticsReader reader(store);
  for (auto& t : profile.tables) {
    if (t.id == 0 || !want(t)) continue;
    stats::TableAggregate agg = reader.read(t);
    if (!agg.empty()) t.aggregate = std::move(agg);
  }
}

}  // namespace edo::db
