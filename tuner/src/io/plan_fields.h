// A declared record's keys in a plan document (edo/model/fields.h, edo/model/tune_fields.h):
// writing them into a table's JSON object and reading them back with every value type- and
// range-checked, plus the typed readers plan import uses for its other keys. Private to tuner/.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "edo/model/fields.h"
#include "edo/model/strategy_params_json.h"
#include "text.h"

namespace edo::tuner::plan_read {

using ordered_json = nlohmann::ordered_json;

// Throws PlanError("not a valid edo plan: <what>").
[[noreturn]] void fail(const std::string& what);
// obj[key], or fail naming `where` and the missing key.
const ordered_json& field(const ordered_json& obj, const char* key, const std::string& where);
uint64_t get_u64(const ordered_json& obj, const char* key, const std::string& where);
// A finite number >= 0, or `if_null` when the key holds null and null is allowed.
double get_number(const ordered_json& obj, const char* key, const std::string& where, bool null_ok, double if_null);
std::string get_string(const ordered_json& obj, const char* key, const std::string& where);
std::string opt_string(const ordered_json& obj, const char* key, const std::string& where);  // "" when absent or null
bool get_bool(const ordered_json& obj, const char* key, const std::string& where);
// A number in [lo, hi]; nullopt when absent or null.
std::optional<double> opt_number(const ordered_json& obj, const char* key, const std::string& where, double lo, double hi);

}  // namespace edo::tuner::plan_read

namespace edo::tuner {

// NaN and infinities are null in a plan.
inline nlohmann::ordered_json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}
inline nlohmann::ordered_json opt_or_null(const std::optional<double>& v) {
  return v ? number_or_null(*v) : nlohmann::ordered_json(nullptr);
}

// Writes r's plan fields into `j`, in declared order.
template <class R, size_t N>
void fields_to_json(nlohmann::ordered_json& j, const R& r, const model::Record<R, N>& rec) {
  static const R defaults{};
  for (const auto& f : rec.fields) {
    if (f.in_plan == model::InPlan::kNo) continue;
    std::visit(
        [&](auto m) {
          using T = std::decay_t<decltype(r.*m)>;
          const T& v = r.*m;
          if (f.in_plan == model::InPlan::kNullIsDefault && v == defaults.*m) j[f.plan_key()] = nullptr;
          else if constexpr (std::is_same_v<T, std::string>) j[f.plan_key()] = valid_utf8(v);
          else if constexpr (std::is_enum_v<T>) j[f.plan_key()] = std::string(model::to_string(v));
          else if constexpr (std::is_same_v<T, std::vector<model::TuneReason>>) j[f.plan_key()] = model::encode_reasons(v);
          else if constexpr (std::is_same_v<T, double>) j[f.plan_key()] = number_or_null(v);
          else if constexpr (std::is_same_v<T, std::optional<double>>) j[f.plan_key()] = opt_or_null(v);
          else if constexpr (std::is_same_v<T, std::optional<int64_t>> || std::is_same_v<T, std::optional<int32_t>>)
            j[f.plan_key()] = v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
          else if constexpr (std::is_same_v<T, model::StrategyParams>) j[f.plan_key()] = model::params_to_json(v);
          else j[f.plan_key()] = v;
        },
        f.member);
  }
}

// Reads r's plan fields from `obj` (`where` names it in messages): a required key must be
// there, an optional one absent leaves its member as it is, a null one of kNullIsDefault reads
// as the member's default; every value is checked against its type and declared range.
template <class R, size_t N>
void fields_from_json(const nlohmann::ordered_json& obj, R& r, const model::Record<R, N>& rec, const std::string& where) {
  using namespace plan_read;
  static const R defaults{};
  for (const auto& f : rec.fields) {
    const char* key = f.plan_key();
    const bool optional = f.in_plan == model::InPlan::kOptional || f.in_plan == model::InPlan::kNullIsDefault;
    if (f.in_plan == model::InPlan::kNo || (optional && !obj.contains(key))) continue;
    std::visit(
        [&](auto m) {
          using T = std::decay_t<decltype(r.*m)>;
          T& v = r.*m;
          if (f.in_plan == model::InPlan::kNullIsDefault && obj[key].is_null()) v = defaults.*m;
          else if constexpr (std::is_same_v<T, std::string>) v = f.in_plan == model::InPlan::kRequired ? get_string(obj, key, where) : opt_string(obj, key, where);
          else if constexpr (std::is_enum_v<T>) {
            const std::string word = get_string(obj, key, where);
            const std::optional<T> e = model::from_string<T>(word);
            if (!e) fail(where + ": \"" + key + "\" is \"" + valid_utf8(word) + "\", not " + model::allowed_words<T>());
            v = *e;
          } else if constexpr (std::is_same_v<T, std::vector<model::TuneReason>>) {
            std::optional<std::vector<model::TuneReason>> reasons = model::decode_reasons(get_string(obj, key, where));
            if (!reasons) fail(where + ": \"" + key + "\" is not a list of reasons");
            v = std::move(*reasons);
          } else if constexpr (std::is_same_v<T, bool>) v = get_bool(obj, key, where);
          else if constexpr (std::is_same_v<T, std::optional<double>>) v = opt_number(obj, key, where, f.lo, f.hi);
          else if constexpr (std::is_same_v<T, model::StrategyParams>) {
            if (!obj.contains(key) || !obj[key].is_object()) fail(where + ": \"" + key + "\" is not an object");
            v = model::params_from_json(obj[key]);
          } else if constexpr (std::is_same_v<T, double>) {
            v = get_number(obj, key, where, true, v);
            if (v > f.hi) fail(where + ": \"" + key + "\" is more than " + std::to_string(f.hi));
          } else {
            const uint64_t x = get_u64(obj, key, where);
            if (x < f.lo || static_cast<double>(x) > f.hi)
              fail(where + ": \"" + key + "\" is " + std::to_string(x) + ", outside " + std::to_string(static_cast<uint64_t>(f.lo)) + ".." +
                   (std::isfinite(f.hi) ? std::to_string(static_cast<uint64_t>(f.hi)) : std::string()));
            v = static_cast<T>(x);
          }
        },
        f.member);
  }
}

}  // namespace edo::tuner
