// A declared record (edo/model/fields.h) in SQLite: its column list for CREATE TABLE, its
// INSERT, binding a record's values to it and reading them back by column name. Private to db/.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <map>
#include <type_traits>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>

#include "edo/db/profile_store.h"
#include "edo/model/fields.h"
#include "edo/model/strategy_params_json.h"

namespace edo::db {

// A stored value outside its field's declared range. It does not name the file: the store's
// load functions catch it and say whose file is corrupt.
struct OutOfRange : DbError {
  using DbError::DbError;
};

// "name TEXT NOT NULL, rows INTEGER NOT NULL, ..." (the declared columns, for CREATE TABLE).
template <class R, size_t N>
std::string column_list_sql(const model::Record<R, N>& rec) {
  std::string out;
  for (const auto& f : rec.fields) out += (out.empty() ? "" : ", ") + std::string(f.column) + " " + f.sql;
  return out;
}

// "INSERT INTO t(k1, k2, c1, c2...) VALUES (:k1, :k2, :c1, :c2...)": the store's own `keys`
// first (parameters 1..K, bound by their names, ":k1"), then the declared columns (bind_fields
// binds them in declared order). `verb`: "INSERT OR REPLACE", "INSERT OR IGNORE" for a table
// whose rows are unique.
template <class R, size_t N>
std::string insert_sql(const model::Record<R, N>& rec, const std::vector<const char*>& keys, const char* verb = "INSERT") {
  std::string names, values;
  auto add = [&](const char* c) {
    names += (names.empty() ? "" : ", ") + std::string(c);
    values += (values.empty() ? ":" : ", :") + std::string(c);
  };
  for (const char* k : keys) add(k);
  for (const auto& f : rec.fields) add(f.column);
  return std::string(verb) + " INTO " + std::string(rec.table) + "(" + names + ") VALUES (" + values + ")";
}

// "INSERT ... ON CONFLICT(<conflict>) DO UPDATE SET k2=excluded.k2, c1=excluded.c1...": a row
// updated in place when its key is there (its parameters are insert_sql's).
template <class R, size_t N>
std::string upsert_sql(const model::Record<R, N>& rec, const std::vector<const char*>& keys, const std::string& conflict) {
  std::string set;
  auto add = [&](const std::string& c) {
    if (c != conflict) set += (set.empty() ? "" : ", ") + c + "=excluded." + c;
  };
  for (const char* k : keys) add(k);
  for (const auto& f : rec.fields) add(f.column);
  return insert_sql(rec, keys) + " ON CONFLICT(" + conflict + ") DO UPDATE SET " + set;
}

// "UPDATE t SET k1 = :k1, c1 = :c1... WHERE <where> = :<where>": the `keys` (parameters 1..K),
// the declared columns (bind_fields), then the row's key (parameter K + N + 1).
template <class R, size_t N>
std::string update_sql(const model::Record<R, N>& rec, const std::vector<const char*>& keys, const std::string& where) {
  std::string set;
  auto add = [&](const std::string& c) { set += (set.empty() ? "" : ", ") + c + " = :" + c; };
  for (const char* k : keys) add(k);
  for (const auto& f : rec.fields) add(f.column);
  return "UPDATE " + std::string(rec.table) + " SET " + set + " WHERE " + where + " = :" + where;
}

// "k1, c1, c2..." for a SELECT; with a `prefix` ("t." in a join) "t.k1 AS k1, ...", so that
// FieldReader finds each column by its name.
template <class R, size_t N>
std::string select_columns(const model::Record<R, N>& rec, const std::vector<const char*>& keys, const std::string& prefix = "") {
  std::string names;
  auto add = [&](const std::string& c) { names += (names.empty() ? "" : ", ") + (prefix.empty() ? c : prefix + c + " AS " + c); };
  for (const char* k : keys) add(k);
  for (const auto& f : rec.fields) add(f.column);
  return names;
}

// "SELECT k1, c1, c2... FROM t" (add the WHERE and ORDER BY).
template <class R, size_t N>
std::string select_sql(const model::Record<R, N>& rec, const std::vector<const char*>& keys) {
  return "SELECT " + select_columns(rec, keys) + " FROM " + rec.table;
}

namespace detail {
inline bool nullable(const char* sql) { return std::strstr(sql, "NOT NULL") == nullptr; }

template <class T>
constexpr bool is_optional_int = std::is_same_v<T, std::optional<int64_t>> || std::is_same_v<T, std::optional<int32_t>>;

template <class R>
void bind_one(SQLite::Statement& s, int i, const R& r, const model::Field<R>& f) {
  std::visit(
      [&](auto m) {
        using T = std::decay_t<decltype(r.*m)>;
        const T& v = r.*m;
        if constexpr (std::is_same_v<T, std::string>) s.bind(i, v);
        else if constexpr (std::is_enum_v<T>) s.bind(i, std::string(model::to_string(v)));
        else if constexpr (std::is_same_v<T, std::vector<model::TuneReason>>) s.bind(i, model::encode_reasons(v));
        else if constexpr (std::is_same_v<T, bool>) s.bind(i, v ? 1 : 0);
        else if constexpr (std::is_same_v<T, std::optional<double>>) {
          if (v && std::isfinite(*v)) s.bind(i, *v);
          else s.bind(i);
        } else if constexpr (is_optional_int<T>) {
          if (v) s.bind(i, static_cast<int64_t>(*v));
          else s.bind(i);
        } else if constexpr (std::is_same_v<T, double>) {
          if (std::isfinite(v)) s.bind(i, v);
          else if (nullable(f.sql)) s.bind(i);  // "none" (not measured, no limit)
          else s.bind(i, 0.0);
        } else if constexpr (std::is_same_v<T, model::StrategyParams>) {
          s.bind(i, model::params_to_text(v));
        } else {
          s.bind(i, static_cast<int64_t>(v));  // a uint64_t: its bits
        }
      },
      f.member);
}

// A stored integer of a field checked against its declared range.
template <class R>
int64_t in_range(int64_t x, const model::Field<R>& f, const char* table) {
  if (static_cast<double>(x) < f.lo || static_cast<double>(x) > f.hi)
    throw OutOfRange(std::string(table) + "." + f.column + " is " + std::to_string(x) + ", outside " +
                     std::to_string(static_cast<int64_t>(f.lo)) + ".." + std::to_string(static_cast<int64_t>(f.hi)));
  return x;
}

// A column of the current row into r's member. In a nullable column, NULL reads as the
// member's value in `defaults` (a default-constructed record): "none" (NaN, no limit), or an
// empty optional. A NOT NULL column is not asked (each question to SQLite takes its lock).
template <class R>
void read_one(const SQLite::Column& c, bool nullable, R& r, const model::Field<R>& f, const R& defaults, const char* table) {
  std::visit(
      [&](auto m) {
        using T = std::decay_t<decltype(r.*m)>;
        T& v = r.*m;
        if (nullable && c.isNull()) {
          v = defaults.*m;
          return;
        }
        if constexpr (std::is_same_v<T, std::string>) {
          v = c.getString();
        } else if constexpr (std::is_enum_v<T>) {
          const std::string word = c.getString();
          const std::optional<T> e = model::from_string<T>(word);
          if (!e) throw OutOfRange(std::string(table) + "." + f.column + " is \"" + word + "\", not " + model::allowed_words<T>());
          v = *e;
        } else if constexpr (std::is_same_v<T, std::vector<model::TuneReason>>) {
          std::optional<std::vector<model::TuneReason>> reasons = model::decode_reasons(c.getString());
          if (!reasons) throw OutOfRange(std::string(table) + "." + f.column + " is not a list of reasons");
          v = std::move(*reasons);
        } else if constexpr (std::is_same_v<T, std::optional<double>> || std::is_same_v<T, double>) {
          v = c.getDouble();
        } else if constexpr (std::is_same_v<T, model::StrategyParams>) {
          try {
            v = model::params_from_text(c.getString());
          } catch (const std::invalid_argument& e) {
            throw OutOfRange(std::string(table) + "." + f.column + ": " + e.what());
          }
        } else {
          const int64_t x = c.getInt64();
          if constexpr (std::is_same_v<T, bool>) v = x != 0;
          else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, std::optional<int64_t>>) v = x;
          else if constexpr (std::is_same_v<T, uint64_t>) {
            if (x < 0 && f.lo != model::kAnyBits) throw OutOfRange(std::string(table) + "." + f.column + " is " + std::to_string(x) + ", not a count");
            v = static_cast<uint64_t>(x);
          } else if constexpr (std::is_same_v<T, std::optional<int32_t>> || std::is_same_v<T, int32_t>) {
            // Saturated (an exit code or device index at the edge of its type is shown, not refused).
            v = static_cast<int32_t>(std::clamp<int64_t>(x, static_cast<int64_t>(f.lo), static_cast<int64_t>(f.hi)));
          } else {
            v = static_cast<T>(in_range(x, f, table));
          }
        }
      },
      f.member);
}
}  // namespace detail

// Binds r's declared fields to an insert_sql(), upsert_sql() or update_sql() statement made with
// `keys` store columns (bound by the caller).
template <class R, size_t N>
void bind_fields(SQLite::Statement& s, const R& r, const model::Record<R, N>& rec, size_t keys) {
  for (size_t i = 0; i < N; ++i) detail::bind_one(s, static_cast<int>(keys + i + 1), r, rec.fields[i]);
}

// Reads a row's declared fields by column name: the positions are looked up once per statement,
// and each column's reader is made at the first row and kept (the largest tables, memory events,
// are read a million rows at a time: a SQLite::Column per value would cost a reference count).
template <class R, size_t N>
class FieldReader {
 public:
  FieldReader(const SQLite::Statement& s, const model::Record<R, N>& rec) : rec_(rec) {
    for (size_t i = 0; i < N; ++i) {
      index_[i] = s.getColumnIndex(rec.fields[i].column);
      nullable_[i] = detail::nullable(rec.fields[i].sql);
    }
  }
  // Throws OutOfRange for a value outside its declared range.
  void read(const SQLite::Statement& s, R& r) const {
    if (columns_.empty())  // a Column reads its statement's current row, whichever it is
      for (size_t i = 0; i < N; ++i) columns_.push_back(s.getColumn(index_[i]));
    for (size_t i = 0; i < N; ++i) detail::read_one(columns_[i], nullable_[i], r, rec_.fields[i], defaults_, rec_.table);
  }

 private:
  const model::Record<R, N>& rec_;
  const R defaults_{};
  std::array<int, N> index_{};
  std::array<bool, N> nullable_{};
  mutable std::vector<SQLite::Column> columns_;
};

// Inserts each of `rows` into a statement made by insert_sql() with `keys` store columns, which
// the caller has bound by name after a reset() (a statement binds only between runs; a binding
// stays through reset(): bound once for all rows).
template <class R, size_t N, class Rows>
void insert_each(SQLite::Statement& s, const model::Record<R, N>& rec, const Rows& rows, size_t keys) {
  for (const R& r : rows) {
    s.reset();
    bind_fields(s, r, rec, keys);
    s.exec();
  }
}

// Inserts each of `rows` with the store's `keys` bound to the same values (a run id, a plan id).
template <class R, size_t N>
void insert_rows(SQLite::Database& d, const model::Record<R, N>& rec, const std::vector<R>& rows,
                 std::initializer_list<std::pair<const char*, int64_t>> keys, const char* verb = "INSERT") {
  std::vector<const char*> names;
  for (const auto& k : keys) names.push_back(k.first);
  SQLite::Statement s(d, insert_sql(rec, names, verb));
  for (const auto& k : keys) s.bind(std::string(":") + k.first, k.second);
  insert_each(s, rec, rows, keys.size());
}

// Each column of `table` as "TYPE[ NOT NULL][ DEFAULT value]", by name (PRAGMA table_info).
std::map<std::string, std::string> column_types(SQLite::Database& db, const std::string& table);
// The differences between the columns `declared` (name -> type as column_types says) and those
// of `table` in `db`, one line each; `store_keys` are columns the store keeps itself (ids).
std::vector<std::string> column_differences(SQLite::Database& db, const std::string& table,
                                            const std::map<std::string, std::string>& declared,
                                            const std::vector<const char*>& store_keys);

// Where the migrated schema of `db` and the declaration `rec` disagree (empty: they agree).
template <class R, size_t N>
std::vector<std::string> schema_differences(SQLite::Database& db, const model::Record<R, N>& rec,
                                            const std::vector<const char*>& store_keys) {
  SQLite::Database scratch(":memory:", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  scratch.exec("CREATE TABLE declared (" + column_list_sql(rec) + ")");
  return column_differences(db, rec.table, column_types(scratch, "declared"), store_keys);
}

}  // namespace edo::db
