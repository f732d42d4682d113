#include "edo/gui/recording/recording.h"

#include <map>

#include "edo/db/table_samples.h"
#include "edo/db/tune_store.h"
#include "recording_torchrec_facts.h"
#include "edo/tuner/vocab_coverage.h"
#include "edo/model/union_view.h"

namespace edo::gui {

const model::TableView* Recording::find_table(const std::string& name) const {
  for (const auto& t : tables)
    if (t.name == name) return &t;
  return nullptr;
}

const model::Session* Recording::session(int64_t id) const {
  for (const auto& s : profile.sessions)
    if (s.id == id) return &s;
  return nullptr;
}

uint64_t Recording::total_lookups() const {
  uint64_t n = 0;
  for (const auto& t : tables) n += t.summary.lookups;
  return n;
}

std::shared_ptr<Recording> make_outline(const QString& path, db::ProfileStore::Outline outline,
                                        std::optional<model::TuneResult> tune) {
  auto rec = std::make_shared<Recording>();
  rec->tune = std::move(tune);
  rec->path = path;
  rec->profile = std::move(outline.profile);
  // The views of the outline (model::table_views() decides which tables are one), with each
  // view's lookups added up from the stored counts of the tables it stands for.
  std::vector<std::string> view_of_table;
  rec->tables = model::table_views(rec->profile, {}, &view_of_table);
  std::map<std::string, model::TableView*> by_name;
  for (auto& v : rec->tables) by_name[v.name] = &v;
  for (size_t i = 0; i < rec->profile.tables.size() && i < view_of_table.size(); ++i) {
    auto stored = outline.lookups_by_table.find(rec->profile.tables[i].id);
    auto view = by_name.find(view_of_table[i]);
    if (stored != outline.lookups_by_table.end() && view != by_name.end()) view->second->summary.lookups += stored->second;
  }
  rec->ranks = model::rank_views(rec->profile, model::job_view(rec->profile), view_of_table, &outline.lookups_by_table);
  rec->timelines = build_timelines(rec->profile);
  rec->peak_bytes = rec->profile.peak_bytes();
  rec->table_memory = rec->profile.table_memory();
  rec->has_statistics = false;
  return rec;
}

std::shared_ptr<Recording> make_recording(const QString& path, model::Profile profile,
                                          const std::function<void(size_t, size_t)>& on_progress,
                                          std::optional<model::TuneResult> tune) {
  auto rec = std::make_shared<Recording>();
  rec->tune = std::move(tune);
  rec->path = path;
  rec->profile = std::move(profile);
  std::vector<std::string> view_of_table;
  rec->tables = model::table_views(
      rec->profile,
      [&](size_t done, size_t total) {
        if (on_progress) on_progress(done, total);
      },
      &view_of_table);
  model::add_union_lru(rec->profile, rec->tables, view_of_table);  // read on several ranks: the union LRU curve too
  rec->ranks = model::rank_views(rec->profile, model::job_view(rec->profile), view_of_table);
  rec->view_of_table = std::move(view_of_table);
  for (auto& t : rec->profile.tables) t.aggregate = stats::TableAggregate();
  rec->timelines = build_timelines(rec->profile);
  rec->peak_bytes = rec->profile.peak_bytes();
  rec->table_memory = rec->profile.table_memory();
  rec->has_statistics = true;
  return rec;
}

model::Profile load_profile_for_dashboard(const db::ProfileStore& store, const std::function<void(size_t, size_t)>& on_table) {
  model::Profile profile = store.load_for_viewing(on_table);
  db::load_ordered_samples(store, profile, [&](const model::Table& t) { return tuner::is_token_table(profile, t.name); });
  return profile;
}

std::shared_ptr<Recording> load_recording(const QString& path) {
  db::ProfileStore store(path.toStdString(), db::ProfileStore::Mode::kReadOnly);
  auto rec = make_recording(path, load_profile_for_dashboard(store), {}, db::load_latest_tune_result(store));
  fill_torchrec_facts(*rec, &store);
  return rec;
}

}  // namespace edo::gui
