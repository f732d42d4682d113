// A stored record's fields, declared once: for each, its SQL column (name and type as the
// schema migrations make it), the member it holds, and its key in the plan document (edo.plan/1)
// when it has one. db/ derives the INSERT and the load by column name from a declaration
// (db/src/record_columns.h), the plan writer and reader derive their per-table keys from it
// (tuner/src/plan_fields.h), and a test checks it against the migrated schema. The
// declarations themselves are in tune_fields.h and recording_fields.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <variant>

#include "edo/model/strategy_params.h"

namespace edo::model {

// The member a field holds, by its C++ type. How each type is stored:
//   std::string            TEXT
//   uint64_t, int64_t      INTEGER (a negative value read back as uint64_t: a corrupt file)
//   uint32_t               INTEGER, checked against the field's range when read
//   double                 REAL; a non-finite value is NULL in a nullable column (read back as
//                          the member's default: NaN, infinity...) and 0 in a NOT NULL one
//   bool                   INTEGER 0 or 1
//   std::optional<double>  REAL, NULL when empty
//   StrategyParams         TEXT, their JSON object (strategy_params_json.h)
template <class R>
using Member = std::variant<std::string R::*, uint64_t R::*, int64_t R::*, uint32_t R::*, double R::*, bool R::*,
                            std::optional<double> R::*, StrategyParams R::*>;

// Where a field is in the plan document: not there, optional (older plans lack it: the member
// keeps its default), or required.
enum class InPlan { kNo, kOptional, kRequired };

template <class R>
struct Field {
  const char* column;  // the SQL column
  const char* sql;     // its type, constraints and default, exactly as the migrations wrote them
  Member<R> member;
  const char* key = nullptr;  // the plan's key (nullptr: the column's name)
  InPlan in_plan = InPlan::kNo;
  // Numbers: the range a value read back must be in (a plan that says otherwise is refused,
  // a database that does is corrupt).
  double lo = 0;
  double hi = std::numeric_limits<double>::infinity();

  const char* plan_key() const { return key ? key : column; }
};

// A declaration: a table of the database and its fields, in the plan's key order (the
// migrations' column order may differ: columns are bound and read by name).
template <class R, size_t N>
struct Record {
  const char* table;
  std::array<Field<R>, N> fields;
};

// A declaration of a record derived from R (a test's record with one more field): R's fields
// followed by `more`.
template <class D, class R, size_t N, size_t M>
constexpr Record<D, N + M> extend(const Record<R, N>& base, const std::array<Field<D>, M>& more) {
  Record<D, N + M> out{base.table, {}};
  for (size_t i = 0; i < N; ++i) {
    const Field<R>& f = base.fields[i];
    out.fields[i] = Field<D>{f.column, f.sql, std::visit([](auto m) -> Member<D> { return m; }, f.member), f.key, f.in_plan, f.lo, f.hi};
  }
  for (size_t i = 0; i < M; ++i) out.fields[N + i] = more[i];
  return out;
}

}  // namespace edo::model
