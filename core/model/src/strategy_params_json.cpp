#include "edo/model/strategy_params_json.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>
#include <variant>

namespace edo::model {

using ordered_json = nlohmann::ordered_json;

namespace {

// A count: an unsigned integer, or a whole number >= 0 a hand-written plan spelt as a float.
std::optional<uint64_t> count_of(const ordered_json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) {  // a signed integer (a value made in C++ from an int): a count when >= 0
    const int64_t i = v.get<int64_t>();
    return i >= 0 ? std::optional<uint64_t>(static_cast<uint64_t>(i)) : std::nullopt;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= 0 && d < 18446744073709551616.0 && std::floor(d) == d) return static_cast<uint64_t>(d);
  }
  return std::nullopt;
}

// The nested objects' fields, in the order they are written.
template <class R>
struct NestedField {
  const char* key;
  std::variant<std::optional<uint64_t> R::*, std::optional<double> R::*> member;
};

const NestedField<HeldOutReplay> kHeldOutFields[] = {
    {"fit_fraction", &HeldOutReplay::fit_fraction},
    {"sample_rate", &HeldOutReplay::sample_rate},
    {"sampled_slots", &HeldOutReplay::sampled_slots},
    {"heldout_steps", &HeldOutReplay::heldout_steps},
    {"heldout_sampled_refs", &HeldOutReplay::heldout_sampled_refs},
};

const NestedField<PolicyReplays> kPolicyReplayFields[] = {
    {"cache_rows", &PolicyReplays::cache_rows},   {"slots", &PolicyReplays::slots},
    {"sample_rate", &PolicyReplays::sample_rate}, {"lru", &PolicyReplays::lru},
    {"lfu", &PolicyReplays::lfu},                 {"fbgemm_lru", &PolicyReplays::fbgemm_lru},
    {"fbgemm_lfu", &PolicyReplays::fbgemm_lfu},   {"fbgemm_lru_prefetch", &PolicyReplays::fbgemm_lru_prefetch},
    {"optimal", &PolicyReplays::optimal},
};

template <class R, size_t N>
ordered_json nested_to_json(const R& r, const NestedField<R> (&fields)[N]) {
  ordered_json j = ordered_json::object();
  for (const auto& f : fields)
    std::visit([&](auto m) { if (r.*m) j[f.key] = *(r.*m); }, f.member);
  return j;
}

// Every key known and of its type, or nullopt.
template <class R, size_t N>
std::optional<R> nested_from_json(const ordered_json& j, const NestedField<R> (&fields)[N]) {
  if (!j.is_object()) return std::nullopt;
  R r;
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool typed = false;
    for (const auto& f : fields) {
      if (it.key() != f.key) continue;
      std::visit(
          [&](auto m) {
            using T = typename std::remove_reference_t<decltype(r.*m)>::value_type;
            if constexpr (std::is_same_v<T, uint64_t>) {
              if (auto c = count_of(it.value())) r.*m = *c, typed = true;
            } else if (it.value().is_number()) {
              r.*m = it.value().get<double>(), typed = true;
            }
          },
          f.member);
    }
    if (!typed) return std::nullopt;
  }
  return r;
}

// Writes field `f` of `p` into `j` when it is set; false when it is not.
bool field_to_json(const StrategyParams& p, const ParamField& f, ordered_json& j) {
  return std::visit(
      [&](auto m) {
        const auto& v = p.*m;
        if (!v) return false;
        using T = typename std::remove_reference_t<decltype(v)>::value_type;
        if constexpr (std::is_same_v<T, HeldOutReplay>) j[f.key] = nested_to_json(*v, kHeldOutFields);
        else if constexpr (std::is_same_v<T, PolicyReplays>) j[f.key] = nested_to_json(*v, kPolicyReplayFields);
        else j[f.key] = *v;
        return true;
      },
      f.member);
}

// Reads `v` into field `f` of `p`; false when it does not have the field's type.
bool field_from_json(StrategyParams& p, const ParamField& f, const ordered_json& v) {
  return std::visit(
      [&](auto m) {
        auto& out = p.*m;
        using T = typename std::remove_reference_t<decltype(out)>::value_type;
        if constexpr (std::is_same_v<T, uint64_t>) {
          out = count_of(v);
        } else if constexpr (std::is_same_v<T, double>) {
          if (v.is_number()) out = v.get<double>();
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (v.is_string()) out = v.get<std::string>();
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          if (v.is_array() && std::all_of(v.begin(), v.end(), [](const ordered_json& x) { return x.is_string(); }))
            out = v.get<std::vector<std::string>>();
        } else if constexpr (std::is_same_v<T, HeldOutReplay>) {
          out = nested_from_json(v, kHeldOutFields);
        } else {
          out = nested_from_json(v, kPolicyReplayFields);
        }
        return out.has_value();
      },
      f.member);
}

// By key, built once: a run of 10,000s of tables writes and reads millions of keys.
const ParamField* field_named(const std::string& key) {
  static const std::unordered_map<std::string, const ParamField*> by_key = [] {
    std::unordered_map<std::string, const ParamField*> m;
    for (const auto& f : kStrategyParamFields) m.emplace(f.key, &f);
    return m;
  }();
  const auto it = by_key.find(key);
  return it == by_key.end() ? nullptr : it->second;
}

}  // namespace

ordered_json params_to_json(const StrategyParams& p) {
  ordered_json j = ordered_json::object();
  auto write = [&](const std::string& key) {
    if (j.contains(key)) return;
    if (const ParamField* f = field_named(key); f && field_to_json(p, *f, j)) return;
    for (const auto& [k, text] : p.unknown)
      if (k == key) j[k] = ordered_json::parse(text);
  };
  for (const auto& key : p.order.keys) write(key);
  for (const auto& f : kStrategyParamFields) write(f.key);
  for (const auto& u : p.unknown) write(u.first);
  return j;
}

StrategyParams params_from_json(const ordered_json& j) {
  if (!j.is_object()) throw std::invalid_argument("the strategy's params are not a JSON object");
  StrategyParams p;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const ParamField* f = field_named(it.key());
    if (!f || !field_from_json(p, *f, it.value()))
      p.unknown.emplace_back(it.key(), it.value().dump(-1, ' ', false, ordered_json::error_handler_t::replace));
    p.order.keys.push_back(it.key());
  }
  return p;
}

std::string params_to_text(const StrategyParams& p) {
  return params_to_json(p).dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

StrategyParams params_from_text(const std::string& text) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return {};
  const ordered_json j = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw std::invalid_argument("the strategy's params are not JSON: " + text.substr(0, 80));
  return params_from_json(j);
}

}  // namespace edo::model
