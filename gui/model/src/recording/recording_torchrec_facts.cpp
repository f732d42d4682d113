#include "recording_torchrec_facts.h"

#include <optional>

#include "edo/db/table_samples.h"
#include "edo/tuner/torchrec_facts.h"

namespace edo::gui {
namespace {

// A view's statistics with the ordered samples its tables stored: the tables decoded again and
// merged in table order, an empty one skipped, as model::table_views() builds the view.
stats::TableAggregate statistics_with_order(db::TableStatisticsReader& reader, const model::Profile& profile,
                                            const std::vector<size_t>& tables) {
  stats::TableAggregate merged;
  for (size_t i : tables) {
    stats::TableAggregate a = reader.read(profile.tables[i]);
    if (a.empty()) continue;
    if (merged.empty()) merged = std::move(a);
    else (void)merged.merge(a);  // table_views() merged them: same shape and mode
  }
  return merged;
}

}  // namespace

std::map<std::string, tuner::TorchRecFacts> torchrec_facts_of_views(const model::Profile& profile,
                                                                     const std::vector<model::TableView>& views,
                                                                     const std::vector<std::string>& view_of_table,
                                                                     const db::ProfileStore* store,
                                                                     const std::function<void(size_t, size_t)>& on_view) {
  std::optional<db::TableStatisticsReader> reader;
  if (store) reader.emplace(*store);
  std::map<std::string, std::vector<size_t>> tables_of;  // view name -> its tables, in table order
  for (size_t i = 0; i < view_of_table.size() && i < profile.tables.size(); ++i) tables_of[view_of_table[i]].push_back(i);
  const uint64_t steps = tuner::recorded_steps(profile);
  std::map<std::string, tuner::TorchRecFacts> out;
  size_t done = 0;
  for (const model::TableView& v : views) {
    if (reader) {
      const stats::TableAggregate with_order = statistics_with_order(*reader, profile, tables_of[v.name]);
      out[v.table_name] = tuner::torchrec_facts_of_view(profile, v, with_order, steps);
    } else {
      out[v.table_name] = tuner::torchrec_facts_of_view(profile, v, v.aggregate, steps);
    }
    if (on_view) on_view(++done, views.size());
  }
  return out;
}

void fill_torchrec_facts(const Recording& rec, const db::ProfileStore* store, const std::function<void(size_t, size_t)>& on_view) {
  rec.torchrec_facts->fill(torchrec_facts_of_views(rec.profile, rec.tables, rec.view_of_table, store, on_view));
}

}  // namespace edo::gui
