// The edo.plan/1 JSON object, and the YAML with the same content.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>

#include "edo/tuner/placement.h"
#include "edo/tuner/plan_io.h"
#include "edo/tuner/summary.h"
#include "edo/model/tune_fields.h"
#include "plan_document.h"
#include "plan_fields.h"
#include "plan_header_fields.h"
#include "text.h"
#include "torchrec_key_value.h"

namespace edo::tuner {

using ordered_json = nlohmann::ordered_json;
using model::TuneCandidate;
using model::TuneChoice;
using model::TuneResult;

namespace {

// A table's "strategy" and "params": its candidate's, "shared" with its owner, or "unchanged".
void strategy_json(ordered_json& j, const TuneChoice& ch, const TuneCandidate* c) {
  if (!ch.shares_with.empty()) {
    j["strategy"] = "shared";
    ordered_json p = {{"with", valid_utf8(ch.shares_with)}};
    if (c) p["format"] = valid_utf8(c->spec);
    j["params"] = p;
  } else if (c && c->table != ch.table) {
    // A table with the same weights as the owner, kept apart as recorded: its own copy.
    j["strategy"] = valid_utf8(c->strategy);
    j["params"] = {{"same_weights_as", valid_utf8(c->table)}};
  } else if (c) {
    j["strategy"] = valid_utf8(c->strategy);
    j["params"] = model::params_to_json(c->params);
  } else {
    j["strategy"] = "unchanged";
    j["params"] = ordered_json::object();
  }
}

// What a training table's plan assumes of training: the gradient the optimizer is given and, for
// a table in fp16/bf16, fp32 optimizer state with stochastic rounding of the weight update (what
// edo.apply_plan installs).
void training_json(ordered_json& j, const TuneResult& r, const TuneCandidate& c) {
  const bool sparse = c.optimizer == "rowwise_adagrad" || c.optimizer == "sparse_adam" || c.optimizer == "sparse_adagrad" ||
                      c.step_covers.find("(sparse gradient)") != std::string::npos;
  j["gradient"] = c.optimizer == "frozen" ? "none" : sparse ? "sparse" : "dense";
  if (trains_in_low_precision(r, c)) j["train_precision"] = {{"optimizer_state", "fp32"}, {"rounding", "stochastic"}};
}

// A plan over several devices: where the table is (docs/tuning.md "Placement").
ordered_json sharding_json(const TuneChoice& ch) {
  ordered_json devices = ordered_json::array(), shards = ordered_json::array();
  for (const auto& s : ch.shards) {
    devices.push_back(s.device);
    ordered_json shard;
    fields_to_json(shard, s, model::kTuneShardFields);
    shards.push_back(std::move(shard));
  }
  return {{"type", ch.sharding}, {"devices", devices}, {"shards", shards}};
}

ordered_json choice_json(const TuneResult& r, const TuneChoice& ch) {
  static const TuneCandidate kNone;  // a table kept as recorded: its candidate keys are a default's
  const TuneCandidate* c = ch.candidate >= 0 && static_cast<size_t>(ch.candidate) < r.candidates.size()
                               ? &r.candidates[static_cast<size_t>(ch.candidate)]
                               : nullptr;
  const model::TuneTable* t = r.table_named(ch.table);
  ordered_json j;
  j["name"] = valid_utf8(ch.table);
  strategy_json(j, ch, c);
  fields_to_json(j, ch, model::kTuneChoiceFields);
  j["step_us"] = c ? number_or_null(ch.step_us) : ordered_json(nullptr);
  // An error that was not measured on held-out lookups is null, never 0 ("validated": false).
  j["error"] = c ? (c->validated ? number_or_null(c->error) : ordered_json(nullptr)) : ordered_json(0.0);
  j["hit_rate"] = c ? opt_or_null(c->hit_rate) : ordered_json(nullptr);
  j["needs_retraining"] = c ? c->needs_retraining : false;
  j["why"] = valid_utf8(ch.why);
  // Added keys.
  fields_to_json(j, c ? *c : kNone, model::kTuneCandidateFields);
  // Offload run by FBGEMM (issue 34 point 2): the cache algorithm the plan picks (TorchRec's
  // CacheAlgorithm, "lru" or "lfu") and its policy headroom (Belady's optimal minus it, held-out
  // hit rates at FBGEMM's slots: cache_policies.h); null for other strategies, for edo's static
  // hot set, and for the headroom when the recording has no ordered sample.
  {
    const bool offload = c && c->strategy == "offload";
    j["cache_policy"] = offload && c->params.cache_policy ? ordered_json(*c->params.cache_policy) : ordered_json(nullptr);
    j["policy_headroom"] = offload && c->params.policy_headroom ? ordered_json(*c->params.policy_headroom) : ordered_json(nullptr);
  }
  j["shares_with"] = ch.shares_with.empty() ? ordered_json(nullptr) : ordered_json(valid_utf8(ch.shares_with));
  j["measured_rows"] = c ? c->measured_rows : 0;
  // The candidate's step-time interval (the whole group's, like its step_us before the split
  // by lookups; null when unknown).
  j["step_us_interval"] = c && std::isfinite(c->step_us_lo) && std::isfinite(c->step_us_hi)
                              ? ordered_json::array({c->step_us_lo, c->step_us_hi})
                              : ordered_json(nullptr);
  // What the step time covers and its phases (the whole group's, like step_us_interval).
  j["step_covers"] = c ? valid_utf8(c->step_covers) : "";
  if (c && std::isfinite(c->forward_us) && std::isfinite(c->backward_us) && std::isfinite(c->update_us))
    j["step_phases_us"] = {{"forward", c->forward_us}, {"backward", c->backward_us}, {"update", c->update_us}};
  else
    j["step_phases_us"] = nullptr;
  // Where the step time comes from (issue 19 point 8): measured on this table, timed on an
  // identical one ("twin"), or predicted from its class's representative; null when unknown.
  if (c && c->timing_kind != model::TimingKind::kNone) {
    j["timing_source"] = {{"kind", model::to_string(c->timing_kind)},
                          {"from", c->timing_from.empty() ? ordered_json(nullptr) : ordered_json(valid_utf8(c->timing_from))}};
  } else {
    j["timing_source"] = nullptr;
  }
  // The whole change (summary.h strategy_label), and what it assumes of training.
  j["strategy_label"] = valid_utf8(!ch.shares_with.empty() ? std::string("shared") : c ? strategy_label(r, *c) : std::string("unchanged"));
  j["validated"] = c ? c->validated : true;
  if (c && t && t->training) training_json(j, r, *c);
  j["dense_use"] = t && !t->dense_use.empty() ? ordered_json(valid_utf8(t->dense_use)) : ordered_json(nullptr);
  if (t) fields_to_json(j, *t, model::kTuneTableFields);
  // The memory tier that holds the table (model::tier_of: "device", "host" or "ssd"; a tied
  // table is in its owner's) and its bytes on the SSD (the ssd tier: the whole table).
  j["tier"] = c ? std::string(model::tier_of(*c)) : std::string("device");
  j["ssd_bytes"] = ch.ssd_bytes;
  // An ssd table: the KeyValueParams the TorchRec export gives it (torchrec_key_value.h).
  if (c && t && c->strategy == "ssd") j["key_value_params"] = key_value_params_json(*c, *t);
  if (r.devices > 1 && !ch.shards.empty()) j["sharding"] = sharding_json(ch);
  return j;
}

void emit(YAML::Emitter& out, const ordered_json& j, bool flow) {
  switch (j.type()) {
    case ordered_json::value_t::object:
      out << (flow ? YAML::Flow : YAML::Block) << YAML::BeginMap;
      for (auto it = j.begin(); it != j.end(); ++it) {
        out << YAML::Key << YAML::DoubleQuoted << it.key() << YAML::Value;
        emit(out, it.value(), flow);
      }
      out << YAML::EndMap;
      break;
    case ordered_json::value_t::array: {
      // Arrays of numbers (the frontier's points) read best on one line.
      const bool numbers = !j.empty() && std::all_of(j.begin(), j.end(), [](const ordered_json& x) { return x.is_number(); });
      out << (flow || numbers ? YAML::Flow : YAML::Block) << YAML::BeginSeq;
      for (const auto& x : j) emit(out, x, flow || numbers);
      out << YAML::EndSeq;
      break;
    }
    case ordered_json::value_t::string:
      out << YAML::DoubleQuoted << j.get_ref<const std::string&>();
      break;
    case ordered_json::value_t::boolean:
      out << (j.get<bool>() ? "true" : "false");
      break;
    case ordered_json::value_t::number_integer:
      out << j.get<int64_t>();
      break;
    case ordered_json::value_t::number_unsigned:
      out << j.get<uint64_t>();
      break;
    case ordered_json::value_t::number_float:
      out << j.get<double>();
      break;
    default:
      out << YAML::Null;
  }
}

}  // namespace

ordered_json plan_to_json(const TuneResult& r) {
  ordered_json j;
  j["schema"] = kPlanSchema;
  fields_to_json(j, r, kPlanHeadFields);
  fields_to_json(j["baseline"], r, kPlanBaselineFields);
  if (r.feasible) fields_to_json(j["plan"], r, kPlanTotalsFields);
  else j["plan"] = nullptr;
  ordered_json tables = ordered_json::array();
  if (r.feasible)
    for (const auto& ch : r.choices) tables.push_back(choice_json(r, ch));
  j["tables"] = tables;
  ordered_json frontier = ordered_json::array();
  for (const auto& [bytes, us] : r.frontier) frontier.push_back({bytes, number_or_null(us)});
  j["frontier"] = frontier;
  fields_to_json(j, r, kPlanRunFields);
  j["weights_text"] = valid_utf8(weights_text(r));
  // Every step time of the plan is either measured on this device or modelled for it.
  fields_to_json(j["timing"], r, kPlanTimingFields);
  ordered_json notes = ordered_json::array();
  for (const auto& n : r.notes) notes.push_back(valid_utf8(n));
  j["notes"] = notes;
  // Devices the plan is for (budget_bytes is per device), and each one's totals when several.
  fields_to_json(j, r, kPlanTailFields);
  if (r.devices > 1 && r.feasible) {
    ordered_json per = ordered_json::array();
    for (const auto& d : device_loads(r))
      per.push_back({{"device", d.device}, {"device_bytes", d.device_bytes}, {"lookups_per_step", number_or_null(d.lookups_per_step)}});
    j["per_device"] = per;
  }
  return j;
}

std::string plan_to_json_text(const TuneResult& r) {
  return plan_to_json(r).dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

std::string document_to_yaml(const ordered_json& doc, const std::string& comment) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out.SetFloatPrecision(9);
  if (!comment.empty()) out << YAML::Comment(comment);
  emit(out, doc, false);
  return std::string(out.c_str()) + "\n";
}

std::string plan_to_yaml(const TuneResult& r) {
  return document_to_yaml(plan_to_json(r), "edo plan (schema edo.plan/1): the same content as " +
                                               model::command_words().say({.code = model::Reason::kWrittenByExport, .name = "json"}));
}

}  // namespace edo::tuner
