#include "edo/db/table_samples.h"

#include <SQLiteCpp/SQLiteCpp.h>

#include <stdexcept>
#include <string_view>

namespace edo::db {

void load_ordered_samples(const ProfileStore& store, model::Profile& profile, const std::function<bool(const model::Table&)>& want) {
  SQLite::Statement q(store.database(), "SELECT aggregate FROM table_stats WHERE table_id = ?");
  for (auto& t : profile.tables) {
    if (t.id == 0 || !want(t)) continue;
    q.reset();
    q.bind(1, static_cast<int64_t>(t.id));
    if (!q.executeStep() || q.getColumn(0).isNull()) continue;
    SQLite::Column blob = q.getColumn(0);
    std::string_view bytes(static_cast<const char*>(blob.getBlob()), static_cast<size_t>(blob.getBytes()));
    stats::TableAggregate agg;
    if (!stats::TableAggregate::deserialize_lazily(bytes, agg, true))
      throw std::runtime_error("statistics of table '" + t.name + "' do not decode");
    t.aggregate = std::move(agg);
  }
}

}  // namespace edo::db
