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
#include <vector>

#include "edo/model/tune_reasons.h"
#include "edo/model/tune_vocabulary.h"

#include "edo/model/strategy_params.h"

namespace edo::model {

// The member a field holds, by its C++ type. How each type is stored:
//   std::string            TEXT
//   int64_t                INTEGER
//   uint64_t               INTEGER (a negative value read back: a corrupt file), or with the
//                          range kAnyBits every 64-bit value (an address), kept bit for bit
//   uint32_t               INTEGER, checked against the field's range when read
//   int32_t                INTEGER, saturated to the field's range when read (an exit code or
//                          device index at the edge of its type is shown, not refused)
//   std::optional<int64_t> INTEGER, NULL when empty
//   std::optional<int32_t> INTEGER, NULL when empty, saturated like int32_t
//   double                 REAL; a non-finite value is NULL in a nullable column (read back as
//                          the member's default: NaN, infinity...) and 0 in a NOT NULL one
//   bool                   INTEGER 0 or 1
//   std::optional<double>  REAL, NULL when empty
//   an enum of tune_vocabulary.h  TEXT, its word (to_string; a word from_string does not know
//                          is a corrupt file or plan)
//   std::vector<TuneReason>  TEXT, encode_reasons() (tune_reasons.h)
//   StrategyParams         TEXT, their JSON object (strategy_params_json.h)
template <class R>
using Member = std::variant<std::string R::*, uint64_t R::*, int64_t R::*, uint32_t R::*, double R::*, bool R::*,
                            std::optional<double> R::*, int32_t R::*, std::optional<int64_t> R::*,
                            std::optional<int32_t> R::*, TimingKind R::*, RunTiming R::*, Objective R::*,
                            StopReason R::*, RejectionCause R::*, std::vector<TuneReason> R::*,
                            StrategyParams R::*>;

// The range of a uint64_t field that holds any 64-bit value (an address, a stream handle): stored
// as the signed integer of the same bits and read back unchecked.
inline constexpr double kAnyBits = -1;
// The range of an int32_t field that may hold any value of its type (a device index, an exit code).
inline constexpr double kInt32Min = INT32_MIN;
inline constexpr double kInt32Max = INT32_MAX;

// Where a field is in the plan document: not there, optional (older plans lack it: the member
// keeps its default), required, or optional with null standing for the member's default ("",
// 0: no limit, none), which is written as null.
enum class InPlan { kNo, kOptional, kRequired, kNullIsDefault };

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
