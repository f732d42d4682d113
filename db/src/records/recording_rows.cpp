// See recording_rows.h. Every column is bound and read by name through its declaration; the
// store's own columns (ids, kernels.tables) by name too.
#include "recording_rows.h"

#include <SQLiteCpp/Statement.h>

#include <map>
#include <utility>
#include <vector>

#include "edo/model/recording_fields.h"
#include "record_columns.h"
#include "text_lines.h"

namespace edo::db {

using model::Profile;

void save_sessions(SQLite::Database& d, const Profile& p) {
  SQLite::Statement put_session(d, upsert_sql(model::kSessionFields, {"id"}, "id"));
  for (const auto& s : p.sessions) {
    put_session.reset();
    put_session.bind(":id", s.id);
    bind_fields(put_session, s, model::kSessionFields, 1);
    put_session.exec();
  }
  SQLite::Statement del_drops(d, "DELETE FROM session_drops WHERE session_id = :session_id");
  SQLite::Statement put_drop(d, insert_sql(model::kSessionDropFields, {"session_id"}));
  for (const auto& s : p.sessions) {
    del_drops.reset();
    del_drops.bind(":session_id", s.id);
    del_drops.exec();
    put_drop.reset();  // a statement binds only between runs
    put_drop.bind(":session_id", s.id);
    for (const auto& [name, n] : s.drops) {
      put_drop.reset();
      bind_fields(put_drop, model::NamedCount{name, n}, model::kSessionDropFields, 1);
      put_drop.exec();
    }
  }
}

void save_session_rows(SQLite::Database& d, const Profile& p, const std::set<int64_t>& session_ids) {
  for (int64_t sid : session_ids) {
    for (const char* table : {"ties", "memory_events", "kernels", "kernel_tables", "ranges"}) {
      SQLite::Statement del(d, std::string("DELETE FROM ") + table + " WHERE session_id = :session_id");
      del.bind(":session_id", sid);
      del.exec();
    }
  }
  insert_rows(d, model::kTieFields, p.ties, {}, "INSERT OR IGNORE");
  insert_rows(d, model::kMemoryEventFields, p.memory_events, {});
  SQLite::Statement put_kernel(d, insert_sql(model::kKernelFields, {"tables"}));
  SQLite::Statement put_kernel_table(d, insert_sql(model::kKernelTableFields, {"session_id", "kernel"}));
  for (const auto& k : p.kernels) {
    put_kernel.reset();
    put_kernel.bind(":tables", join_lines(k.tables));
    bind_fields(put_kernel, k, model::kKernelFields, 1);
    put_kernel.exec();
    put_kernel_table.reset();
    put_kernel_table.bind(":session_id", k.session_id);
    put_kernel_table.bind(":kernel", k.name);
    insert_each(put_kernel_table, model::kKernelTableFields, k.per_table, 2);
  }
  insert_rows(d, model::kRangeFields, p.ranges, {});
}

void save_metadata_rows(SQLite::Database& d, const std::map<std::string, std::string>& entries) {
  std::vector<model::MetadataEntry> rows;
  rows.reserve(entries.size());
  for (const auto& [key, value] : entries) rows.push_back({key, value});
  insert_rows(d, model::kMetadataFields, rows, {}, "INSERT OR REPLACE");
}

void load_sessions(SQLite::Database& d, Profile& p) {
  SQLite::Statement q(d, select_sql(model::kSessionFields, {"id"}) + " ORDER BY id");
  const FieldReader reader(q, model::kSessionFields);
  while (q.executeStep()) {
    model::Session& s = p.sessions.emplace_back();
    s.id = q.getColumn("id").getInt64();
    try {
      reader.read(q, s);
    } catch (const OutOfRange& e) {
      throw OutOfRange("session " + std::to_string(s.id) + ": " + e.what());
    }
  }
  std::map<int64_t, model::Session*> by_id;
  for (auto& s : p.sessions) by_id[s.id] = &s;
  SQLite::Statement drops(d, select_sql(model::kSessionDropFields, {"session_id"}) + " ORDER BY session_id, name");
  const FieldReader drop_reader(drops, model::kSessionDropFields);
  while (drops.executeStep()) {
    model::NamedCount c;
    drop_reader.read(drops, c);
    auto it = by_id.find(drops.getColumn("session_id").getInt64());
    if (it != by_id.end()) it->second->drops[c.name] = c.count;
  }
}

namespace {

void load_kernels(SQLite::Database& d, Profile& p) {
  SQLite::Statement q(d, select_sql(model::kKernelFields, {"tables"}) + " ORDER BY rowid");
  const FieldReader reader(q, model::kKernelFields);
  while (q.executeStep()) {
    model::KernelStat& k = p.kernels.emplace_back();
    reader.read(q, k);
    k.tables = split_lines(q.getColumn("tables").getString(), /*keep_empty=*/false);
  }
  std::map<std::pair<int64_t, std::string>, size_t> kernel_at;
  for (size_t i = 0; i < p.kernels.size(); ++i) kernel_at.emplace(std::make_pair(p.kernels[i].session_id, p.kernels[i].name), i);
  SQLite::Statement qt(d, select_sql(model::kKernelTableFields, {"session_id", "kernel"}) + " ORDER BY rowid");
  const FieldReader table_reader(qt, model::kKernelTableFields);
  while (qt.executeStep()) {
    auto it = kernel_at.find({qt.getColumn("session_id").getInt64(), qt.getColumn("kernel").getString()});
    if (it == kernel_at.end()) continue;  // a row without its kernel: nothing to attach it to
    table_reader.read(qt, p.kernels[it->second].per_table.emplace_back());
  }
}

// Every row of a declared table in `order`, appended to `out`.
template <class R, size_t N>
void load_all(SQLite::Database& d, const model::Record<R, N>& rec, const std::string& order, std::vector<R>& out) {
  SQLite::Statement q(d, select_sql(rec, {}) + " ORDER BY " + order);
  const FieldReader reader(q, rec);
  while (q.executeStep()) reader.read(q, out.emplace_back());
}

}  // namespace

void load_session_rows(SQLite::Database& d, Profile& p) {
  load_all(d, model::kTieFields, "rowid", p.ties);
  load_all(d, model::kMemoryEventFields, "session_id, time_ns, rowid", p.memory_events);
  load_kernels(d, p);
  load_all(d, model::kRangeFields, "rowid", p.ranges);
}

void load_metadata(SQLite::Database& d, Profile& p) {
  std::vector<model::MetadataEntry> rows;
  load_all(d, model::kMetadataFields, "key", rows);
  for (auto& e : rows) p.metadata[e.key] = std::move(e.value);
}

}  // namespace edo::db
