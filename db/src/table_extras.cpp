#include "table_extras.h"

#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "edo/db/profile_store.h"
#include "edo/db/weight_store.h"

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

}  // namespace

void save_table_extras(SQLite::Database& d, const model::Profile& p) {
  SQLite::Statement del(d, "DELETE FROM table_extra WHERE table_id = ?");
  SQLite::Statement put(d, "INSERT INTO table_extra(table_id, kind, bytes) VALUES (?,?,?)");
  for (const auto& t : p.tables) {
    del.reset();
    del.bind(1, t.id);
    del.exec();
    for (const auto& [kind, bytes] : t.extra_by_kind) {
      put.reset();
      put.bind(1, t.id);
      put.bind(2, kind);
      put.bind(3, static_cast<int64_t>(bytes));
      put.exec();
    }
  }
}

void save_first_seen(SQLite::Database& d, const model::Profile& p) {
  SQLite::Statement del(d, "DELETE FROM table_first_seen WHERE table_id = ?");
  SQLite::Statement put(d, "INSERT OR REPLACE INTO table_first_seen(table_id, position, new_rows, lookups) VALUES (?,?,?,?)");
  for (const auto& t : p.tables) {
    del.reset();
    del.bind(1, t.id);
    del.exec();
    for (const auto& s : t.first_seen) {
      put.reset();
      put.bind(1, t.id);
      put.bind(2, static_cast<int64_t>(s.position));
      put.bind(3, static_cast<int64_t>(s.new_rows));
      put.bind(4, static_cast<int64_t>(s.lookups));
      put.exec();
    }
  }
}

void load_first_seen(SQLite::Database& d, model::Profile& p) {
  std::map<int64_t, model::Table*> by_id;
  for (auto& t : p.tables) by_id[t.id] = &t;
  SQLite::Statement q(d, "SELECT table_id, position, new_rows, lookups FROM table_first_seen ORDER BY table_id, position");
  while (q.executeStep()) {
    auto it = by_id.find(q.getColumn(0).getInt64());
    if (it == by_id.end()) continue;
    const auto u = [&](int i) { return static_cast<uint64_t>(std::max<int64_t>(0, q.getColumn(i).getInt64())); };
    it->second->first_seen.push_back({u(1), u(2), u(3)});
  }
}

void load_table_extras(SQLite::Database& d, model::Profile& p) {
  std::map<int64_t, model::Table*> by_id;
  for (auto& t : p.tables) by_id[t.id] = &t;
  SQLite::Statement q(d, "SELECT table_id, kind, bytes FROM table_extra ORDER BY table_id, kind");
  while (q.executeStep()) {
    auto it = by_id.find(q.getColumn(0).getInt64());
    if (it == by_id.end()) continue;
    const int64_t bytes = q.getColumn(2).getInt64();
    // Never negative as edo writes it: damage, not 18446744073709551615 bytes.
    if (bytes < 0)
      throw DbError("table '" + it->second->name + "': extra bytes of kind '" + q.getColumn(1).getString() + "' is " +
                    std::to_string(bytes) + ", not a count");
    it->second->extra_by_kind[q.getColumn(1).getString()] = static_cast<uint64_t>(bytes);
  }
}

void save_weight_snapshots(SQLite::Database& d, const model::Profile& p, WrittenSnapshots& written) {
  if (p.weights.empty()) return;
  std::map<std::pair<int64_t, std::string>, int64_t> table_id;
  for (const auto& t : p.tables) table_id[{t.session_id, t.name}] = t.id;
  SQLite::Statement put(d,
      "INSERT OR REPLACE INTO weight_snapshots(table_id, dtype, dim, table_rows, population, hot_count, rows, vals)"
      " VALUES (?,?,?,?,?,?,?,?)");
  for (const auto& w : p.weights) {
    auto it = table_id.find({w.session_id, w.table});
    if (it == table_id.end() || w.rows.empty()) continue;  // a snapshot of a table not in this profile
    if (!w.consistent()) throw DbError("internal error: weight snapshot of '" + w.table + "' has values of the wrong size");
    auto done = written.find(it->second);
    if (done != written.end() && done->second == w.revision) continue;
    const std::string rows = rows_blob(w.rows);
    put.reset();
    put.bind(1, it->second);
    put.bind(2, w.dtype);
    put.bind(3, static_cast<int64_t>(w.dim));
    put.bind(4, static_cast<int64_t>(w.table_rows));
    put.bind(5, static_cast<int64_t>(w.population));
    put.bind(6, static_cast<int64_t>(w.hot_count));
    put.bindNoCopy(7, rows.data(), static_cast<int>(rows.size()));
    put.bindNoCopy(8, w.values.data(), static_cast<int>(w.values.size()));
    put.exec();
    written[it->second] = w.revision;
  }
}

std::vector<model::WeightSnapshot> load_weight_snapshots(const ProfileStore& store, const std::string& table) {
  std::vector<model::WeightSnapshot> out;
  try {
    SQLite::Database& d = store.database();
    SQLite::Statement q(d,
        "SELECT t.session_id, t.name, w.dtype, w.dim, w.table_rows, w.population, w.hot_count, w.rows, w.vals"
        " FROM weight_snapshots w JOIN tables t ON t.id = w.table_id"
        " WHERE ? = '' OR t.name = ? ORDER BY t.id");
    q.bind(1, table);
    q.bind(2, table);
    while (q.executeStep()) {
      model::WeightSnapshot w;
      w.session_id = q.getColumn(0).getInt64();
      w.table = q.getColumn(1).getString();
      w.dtype = q.getColumn(2).getString();
      const int64_t dim = q.getColumn(3).getInt64();
      const int64_t hot = q.getColumn(6).getInt64();
      w.table_rows = static_cast<uint64_t>(q.getColumn(4).getInt64());
      w.population = static_cast<uint64_t>(q.getColumn(5).getInt64());
      SQLite::Column rows = q.getColumn(7);
      SQLite::Column vals = q.getColumn(8);
      bool ok = dim > 0 && dim <= (int64_t{1} << 24) && hot >= 0 &&
                rows_from_blob(rows.getBlob(), static_cast<size_t>(rows.getBytes()), w.rows);
      w.dim = static_cast<uint32_t>(ok ? dim : 0);
      w.hot_count = static_cast<uint64_t>(ok ? hot : 0);
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
