// The PyTorch hooks' training facts, sent with edo_note() (docs/database.md):
//   pytorch.loss       "step:loss step:loss ..." (loss may be nan, inf, -inf) -> Session::losses
//   pytorch.optimizer  {"table": NAME, "kind": ..., "lr": ..., "betas": [b1, b2], ...} -> Table::optimizer_params
//   pytorch.dense_use  {"table": NAME, "why": "..."} -> Table::dense_use
// They get storage of their own, so they are not copied into the metadata. A malformed value is
// skipped and counted in one issue line per key and stream: a recording never stops for one.
#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "edo/collector/collector.h"

namespace edo::collector {
namespace {

constexpr std::string_view kLossNote = "pytorch.loss";
constexpr std::string_view kOptimizerNote = "pytorch.optimizer";
constexpr std::string_view kDenseUseNote = "pytorch.dense_use";

// One "step:loss" pair; nullopt when it is not one. from_chars reads "nan", "inf", "-inf" (and
// "infinity") in any locale.
std::optional<model::StepLoss> parse_pair(std::string_view tok) {
  const size_t colon = tok.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == tok.size()) return std::nullopt;
  model::StepLoss out;
  const char* end = tok.data() + colon;
  auto r = std::from_chars(tok.data(), end, out.step);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  const char* vend = tok.data() + tok.size();
  auto v = std::from_chars(tok.data() + colon + 1, vend, out.loss);
  if (v.ec != std::errc() || v.ptr != vend) return std::nullopt;
  return out;
}

// A number field of the optimizer note: absent or null reads as 0; anything else not a number
// makes the note malformed.
bool number_field(const nlohmann::json& j, const char* key, double& out, std::string& why) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return true;
  if (!it->is_number()) {
    why = std::string("\"") + key + "\" is not a number";
    return false;
  }
  out = it->get<double>();
  return true;
}

// The optimizer note's table name and parameters; false (and why) when malformed.
bool parse_optimizer(const nlohmann::json& j, std::string& table, model::OptimizerParams& p, std::string& why) {
  if (!j.is_object() || !j.contains("table") || !j["table"].is_string() || j["table"].get<std::string>().empty()) {
    why = "no \"table\" name";
    return false;
  }
  table = j["table"].get<std::string>();
  if (j.contains("kind") && !j["kind"].is_null()) {
    if (!j["kind"].is_string()) {
      why = "\"kind\" is not a string";
      return false;
    }
    p.kind = j["kind"].get<std::string>();
  }
  for (auto [key, slot] : {std::pair{"lr", &p.lr}, {"eps", &p.eps}, {"weight_decay", &p.weight_decay}, {"momentum", &p.momentum},
                           {"initial_accumulator_value", &p.initial_accumulator_value}})
    if (!number_field(j, key, *slot, why)) return false;
  if (auto it = j.find("betas"); it != j.end() && !it->is_null()) {
    if (!it->is_array() || it->size() != 2 || !(*it)[0].is_number() || !(*it)[1].is_number()) {
      why = "\"betas\" is not two numbers";
      return false;
    }
    p.beta1 = (*it)[0].get<double>();
    p.beta2 = (*it)[1].get<double>();
  }
  if (auto it = j.find("maximize"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      why = "\"maximize\" is not true or false";
      return false;
    }
    p.maximize = it->get<bool>();
  }
  return true;
}

// The dense-use note's table and reason; false (and why) when malformed.
bool parse_dense_use(const nlohmann::json& j, std::string& table, std::string& text, std::string& why) {
  if (!j.is_object() || !j.contains("table") || !j["table"].is_string() || j["table"].get<std::string>().empty()) {
    why = "no \"table\" name";
    return false;
  }
  if (!j.contains("why") || !j["why"].is_string()) {
    why = "no \"why\" text";
    return false;
  }
  table = j["table"].get<std::string>();
  text = j["why"].get<std::string>();
  // One line: the report prints it in a column.
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  if (text.empty()) text = "read whole";
  return true;
}

}  // namespace

void ProfileBuilder::malformed_note(const std::string& stream, const std::string& key, uint64_t offset, const std::string& why) {
  auto [it, first] = malformed_.try_emplace({stream, key}, issues_.size(), 0);
  it->second.second += 1;
  const std::string msg = "malformed " + key + " note (skipped): " + why;
  if (first) {
    issues_.push_back({stream, offset, msg});
  } else {
    issues_[it->second.first].message = msg + " (" + std::to_string(it->second.second) + " such notes in this stream)";
  }
}

void ProfileBuilder::take_pending_facts(model::Table& t) {
  auto pf = pending_facts_.find({t.session_id, t.name});
  if (pf == pending_facts_.end()) return;
  if (pf->second.optimizer) t.optimizer_params = pf->second.optimizer;
  if (pf->second.dense_use) t.dense_use = *pf->second.dense_use;
  pending_facts_.erase(pf);
}

bool ProfileBuilder::apply_training_note(const std::string& stream, model::Session& ses, const wire::Note& v, uint64_t offset) {
  if (v.key == kLossNote) {
    size_t bad = 0;
    std::string first_bad;
    std::string_view rest = v.value;
    while (!rest.empty()) {
      const size_t sp = rest.find_first_of(" \t\n");
      const std::string_view tok = rest.substr(0, sp);
      rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
      if (tok.empty()) continue;
      if (auto pair = parse_pair(tok)) ses.losses.push_back(*pair);
      else if (bad++ == 0) first_bad = std::string(tok.substr(0, 40));
    }
    if (bad) malformed_note(stream, v.key, offset, "'" + first_bad + "' is not step:loss");
    return true;
  }
  const bool optimizer = v.key == kOptimizerNote;
  if (!optimizer && v.key != kDenseUseNote) return false;
  const nlohmann::json j = nlohmann::json::parse(v.value, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    malformed_note(stream, v.key, offset, "not JSON");
    return true;
  }
  std::string table, why, dense;
  model::OptimizerParams params;
  if (optimizer ? !parse_optimizer(j, table, params, why) : !parse_dense_use(j, table, dense, why)) {
    malformed_note(stream, v.key, offset, why);
    return true;
  }
  // The table of this session with that name, or (not registered yet) its pending facts.
  model::Table* target = nullptr;
  for (auto& t : profile_.tables)
    if (t.session_id == ses.id && t.name == table) target = &t;
  if (target && optimizer) target->optimizer_params = params;
  else if (target) target->dense_use = dense;
  else if (optimizer) pending_facts_[{ses.id, table}].optimizer = params;
  else pending_facts_[{ses.id, table}].dense_use = dense;
  return true;
}

}  // namespace edo::collector
