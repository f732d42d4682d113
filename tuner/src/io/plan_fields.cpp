// The typed readers of plan import (plan_fields.h): each value type-checked, each failure one
// PlanError line naming where.
#include "plan_fields.h"

#include <cmath>

#include "edo/tuner/plan_io.h"

namespace edo::tuner::plan_read {

void fail(const std::string& what) { throw PlanError("not a valid edo plan: " + what); }

const ordered_json& field(const ordered_json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(where + " has no \"" + key + "\"");
  return *it;
}

uint64_t get_u64(const ordered_json& obj, const char* key, const std::string& where) {
  const ordered_json& v = field(obj, key, where);
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= 0 && d < 1.8446744073709552e19 && d == std::floor(d)) return static_cast<uint64_t>(d);
  }
  fail(where + ": \"" + key + "\" is not a byte count (a whole number >= 0)");
}

// A finite number >= 0, or if_null when the key holds null and null is allowed.
double get_number(const ordered_json& obj, const char* key, const std::string& where, bool null_ok, double if_null) {
  const ordered_json& v = field(obj, key, where);
  if (v.is_null() && null_ok) return if_null;
  if (v.is_number()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d >= 0) return d;
  }
  fail(where + ": \"" + key + "\" is not a number >= 0" + (null_ok ? " or null" : ""));
}

std::string get_string(const ordered_json& obj, const char* key, const std::string& where) {
  const ordered_json& v = field(obj, key, where);
  if (!v.is_string()) fail(where + ": \"" + key + "\" is not text");
  return v.get<std::string>();
}

std::string opt_string(const ordered_json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "";
  if (!it->is_string()) fail(where + ": \"" + key + "\" is not text");
  return it->get<std::string>();
}

bool get_bool(const ordered_json& obj, const char* key, const std::string& where) {
  const ordered_json& v = field(obj, key, where);
  if (!v.is_boolean()) fail(where + ": \"" + key + "\" is not true or false");
  return v.get<bool>();
}

std::optional<double> opt_number(const ordered_json& obj, const char* key, const std::string& where, double lo, double hi) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_number() || !(it->get<double>() >= lo && it->get<double>() <= hi))
    fail(where + ": \"" + key + "\" is not " + (lo == 0 && hi == 1 ? std::string("a rate in [0, 1]") : "a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]") + " or null");
  return it->get<double>();
}

}  // namespace edo::tuner::plan_read
