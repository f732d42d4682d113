#include "edo/gui/recording.h"

#include <map>

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

std::shared_ptr<Recording> make_outline(const QString& path, db::ProfileStore::Outline outline) {
  auto rec = std::make_shared<Recording>();
  rec->path = path;
  rec->profile = std::move(outline.profile);
  rec->tables = model::table_views(rec->profile);
  // The views merge tables of one name and shape across processes; a name recorded with
  // another shape becomes "name (session N)" (model::table_views). Add stored lookups the
  // same way.
  std::map<std::string, model::TableView*> by_name;
  for (auto& v : rec->tables) by_name[v.name] = &v;
  for (const auto& t : rec->profile.tables) {
    auto it = outline.lookups_by_table.find(t.id);
    if (it == outline.lookups_by_table.end()) continue;
    auto v = by_name.find(t.name);
    if (v == by_name.end() || v->second->rows != t.rows || v->second->dim != t.dim)
      v = by_name.find(t.name + " (session " + std::to_string(t.session_id) + ")");
    if (v != by_name.end()) v->second->summary.lookups += it->second;
  }
  rec->timelines = build_timelines(rec->profile);
  rec->peak_bytes = rec->profile.peak_bytes();
  rec->table_memory = rec->profile.table_memory();
  rec->has_statistics = false;
  return rec;
}

std::shared_ptr<Recording> make_recording(const QString& path, model::Profile profile,
                                          const std::function<void(size_t, size_t)>& on_progress) {
  auto rec = std::make_shared<Recording>();
  rec->path = path;
  rec->profile = std::move(profile);
  rec->tables = model::table_views(rec->profile, [&](size_t done, size_t total) {
    if (on_progress) on_progress(done, total);
  });
  for (auto& t : rec->profile.tables) t.aggregate = stats::TableAggregate();
  rec->timelines = build_timelines(rec->profile);
  rec->peak_bytes = rec->profile.peak_bytes();
  rec->table_memory = rec->profile.table_memory();
  rec->has_statistics = true;
  return rec;
}

std::shared_ptr<Recording> load_recording(const QString& path) {
  db::ProfileStore store(path.toStdString(), db::ProfileStore::Mode::kReadOnly);
  return make_recording(path, store.load());
}

}  // namespace edo::gui
