#include "table_extras.h"

#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "edo/db/profile_store.h"
#include "edo/db/weight_store.h"
#include "edo/model/recording_fields.h"
#include "record_columns.h"

namespace edo::db {
namespace {

std::string rows_blob(const std::vector<uint64_t>& rows) {
  std::string out(rows.size() * 8, '\0');
  for (size_t i = 0; i < rows.size(); ++i)
    for (int b = 0; b < 8; ++b) out[i * 8 + size_t(b)] = static_cast<char>((rows[i] >> (8 * b)) & 0xFF);
  return out;
}

bool rows_from_blob(const void* data, size_t bytes, std::vector<uint64_t>& rows) {
  if (bytes % 8 != 0) return false;
  const auto* p = static_cast<const unsigned char*>(data);
  rows.resize(bytes / 8);
  for (size_t i = 0; i < rows.size(); ++i) {
    uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(p[i * 8 + size_t(b)]) << (8 * b);
    rows[i] = v;
  }
  return true;
}

// A table's rows of a per-table record (`rec`, keyed by table_id), replaced: the delete and
// insert statements are the caller's, prepared once for every table.
template <class R, size_t N, class Rows>
void replace_table_rows(SQLite::Statement& del, SQLite::Statement& put, const model::Record<R, N>& rec, int64_t table_id,
                        const Rows& rows) {
  del.reset();
  del.bind(":table_id", table_id);
  del.exec();
  put.reset();  // a statement binds only between runs
  put.bind(":table_id", table_id);
  insert_each(put, rec, rows, 1);
}

// Every row of a per-table record, each handed to `add` with its table (rows of a table not in
// the profile are skipped).
template <class R, size_t N, class Add>
void load_table_rows(SQLite::Database& d, model::Profile& p, const model::Record<R, N>& rec, const std::string& order, Add add) {
  std::map<int64_t, model::Table*> by_id;
  for (auto& t : p.tables) by_id[t.id] = &t;
  SQLite::Statement q(d, select_sql(rec, {"table_id"}) + " ORDER BY " + order);
  const FieldReader reader(q, rec);
  while (q.executeStep()) {
    auto it = by_id.find(q.getColumn("table_id").getInt64());
    if (it == by_id.end()) continue;
    R r;
    try {
      reader.read(q, r);
    } catch (const OutOfRange& e) {
      throw OutOfRange("table '" + it->second->name + "': " + e.what());
    }
    add(*it->second, std::move(r));
  }
}

}  // namespace

void save_table_extras(SQLite::Database& d, const model::Profile& p) {
  SQLite::Statement del(d, "DELETE FROM table_extra WHERE table_id = :table_id");
  SQLite::Statement put(d, insert_sql(model::kTableExtraFields, {"table_id"}));
  std::vector<model::NamedCount> rows;
  for (const auto& t : p.tables) {
    rows.clear();
    for (const auto& [kind, bytes] : t.extra_by_kind) rows.push_back({kind, bytes});
    replace_table_rows(del, put, model::kTableExtraFields, t.id, rows);
  }
}

void save_first_seen(SQLite::Database& d, const model::Profile& p) {
  SQLite::Statement del(d, "DELETE FROM table_first_seen WHERE table_id = :table_id");
  SQLite::Statement put(d, insert_sql(model::kFirstSeenFields, {"table_id"}, "INSERT OR REPLACE"));
  for (const auto& t : p.tables) replace_table_rows(del, put, model::kFirstSeenFields, t.id, t.first_seen);
}

void load_first_seen(SQLite::Database& d, model::Profile& p) {
  load_table_rows(d, p, model::kFirstSeenFields, "table_id, position",
                  [](model::Table& t, model::FirstSeenSegment s) { t.first_seen.push_back(s); });
}

void load_table_extras(SQLite::Database& d, model::Profile& p) {
  load_table_rows(d, p, model::kTableExtraFields, "table_id, kind",
                  [](model::Table& t, model::NamedCount c) { t.extra_by_kind[c.name] = c.count; });
}

void save_weight_snapshots(SQLite::Database& d, const model::Profile& p, WrittenSnapshots& written) {
  if (p.weights.empty()) return;
  std::map<std::pair<int64_t, std::string>, int64_t> table_id;
  for (const auto& t : p.tables) table_id[{t.session_id, t.name}] = t.id;
  SQLite::Statement put(d, insert_sql(model::kWeightSnapshotFields, {"table_id", "rows", "vals"}, "INSERT OR REPLACE"));
  for (const auto& w : p.weights) {
    auto it = table_id.find({w.session_id, w.table});
    if (it == table_id.end() || w.rows.empty()) continue;  // a snapshot of a table not in this profile
    if (!w.consistent()) throw DbError("internal error: weight snapshot of '" + w.table + "' has values of the wrong size");
    auto done = written.find(it->second);
    if (done != written.end() && done->second == w.revision) continue;
    const std::string rows = rows_blob(w.rows);
    put.reset();
    put.bind(":table_id", it->second);
    put.bindNoCopy(":rows", rows.data(), static_cast<int>(rows.size()));
    put.bindNoCopy(":vals", w.values.data(), static_cast<int>(w.values.size()));
    bind_fields(put, w, model::kWeightSnapshotFields, 3);
    put.exec();
    written[it->second] = w.revision;
  }
}

std::vector<model::WeightSnapshot> load_weight_snapshots(const ProfileStore& store, const std::string& table) {
  std::vector<model::WeightSnapshot> out;
  try {
    SQLite::Database& d = store.database();
    SQLite::Statement q(d, "SELECT t.session_id AS session_id, t.name AS name, " +
                               select_columns(model::kWeightSnapshotFields, {"rows", "vals"}, "w.") +
                               " FROM weight_snapshots w JOIN tables t ON t.id = w.table_id"
                               " WHERE :table = '' OR t.name = :table ORDER BY t.id");
    q.bind(":table", table);
    const FieldReader reader(q, model::kWeightSnapshotFields);
    while (q.executeStep()) {
      model::WeightSnapshot w;
      w.session_id = q.getColumn("session_id").getInt64();
      w.table = q.getColumn("name").getString();
      bool ok = true;
      try {
        reader.read(q, w);
      } catch (const OutOfRange&) {
        ok = false;
      }
      SQLite::Column rows = q.getColumn("rows");
      SQLite::Column vals = q.getColumn("vals");
      ok = ok && rows_from_blob(rows.getBlob(), static_cast<size_t>(rows.getBytes()), w.rows);
      if (ok) w.values.assign(static_cast<const char*>(vals.getBlob()), static_cast<size_t>(vals.getBytes()));
      if (!ok || !w.consistent())
        throw DbError(store.path() + ": truncated or corrupt edo database (weight snapshot of table '" + w.table +
                      "' does not decode); record it again with --weights");
      out.push_back(std::move(w));
    }
  } catch (const SQLite::Exception& e) {
    throw DbError(store.path() + ": truncated or corrupt edo database (" + std::string(e.what()) + "); re-record it or restore a copy");
  }
  return out;
}

}  // namespace edo::db
