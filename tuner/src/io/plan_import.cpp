// Plan import: an edo.plan/1 document (JSON or YAML) back into a TuneResult. The input may be
// anything (a user's file, a fuzzer): every value is type- and range-checked, nesting is
// bounded before any recursive parser sees it, and every failure is one PlanError line.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "edo/kernels/strategy.h"
#include "edo/tuner/plan_io.h"
#include "edo/model/tune_fields.h"
#include "mch_replay.h"
#include "plan_document.h"
#include "plan_fields.h"
#include "plan_header_fields.h"

namespace edo::tuner {

using ordered_json = nlohmann::ordered_json;
using model::TuneCandidate;
using model::TuneChoice;
using model::TuneResult;
using model::TuneTable;
using namespace plan_read;

namespace {

constexpr int kMaxDepth = 32;            // a plan nests 4 levels deep
constexpr size_t kMaxText = size_t{256} << 20;
// Values a YAML plan may expand to: 1M, or one per 8 bytes of text if more (a 200,000-table
// plan has about 6M values in 200 MB; a value takes at least 8 bytes of text unless aliased).
constexpr size_t kMaxItems = size_t{1} << 20;  // (a 16K-point frontier is 50K)
size_t max_items(const std::string& text) { return std::max(kMaxItems, text.size() / 8); }

// Nesting depth of brackets outside quoted strings: rejects "[[[[..." before yaml-cpp's
// recursive descent could overflow the stack on it. JSON's too: there a ' or # outside a string
// is a syntax error the parser stops at, so every bracket it reads was counted. (Not a parse
// callback: nlohmann's callback parser rescans the enclosing array after every object, which is
// quadratic in a plan's tables.)
void check_flow_depth(const std::string& text) {
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == '\\' && quote == '"') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) fail("nested more than " + std::to_string(kMaxDepth) + " levels deep");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

// Block nesting shows as indentation: bound it too (a plan needs a few levels).
void check_indent(const std::string& text) {
  size_t col = 0;
  bool leading = true;
  for (char c : text) {
    if (c == '\n') {
      col = 0;
      leading = true;
    } else if (leading && (c == ' ' || c == '-' || c == '\t')) {
      if (++col > 4 * kMaxDepth) fail("indented more than " + std::to_string(4 * kMaxDepth) + " columns");
    } else {
      leading = false;
    }
  }
}

ordered_json scalar_to_json(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: a string, whatever it looks like
  if (s == "~" || s == "null" || s == "Null" || s == "NULL" || s.empty()) return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  ordered_json number = ordered_json::parse(s, nullptr, /*allow_exceptions=*/false);
  if (number.is_number()) return number;
  if (s == ".inf" || s == "+.inf") return std::numeric_limits<double>::infinity();
  if (s == "-.inf") return -std::numeric_limits<double>::infinity();
  if (s == ".nan" || s == ".NaN") return std::numeric_limits<double>::quiet_NaN();
  return s;
}

// `budget` counts the nodes converted: aliases can make a small text name a huge tree
// ("billion laughs"), so the walk stops at max_items(text) nodes however they were written.
ordered_json yaml_to_json(const YAML::Node& n, int depth, size_t& budget) {
  if (depth > kMaxDepth) fail("nested more than " + std::to_string(kMaxDepth) + " levels deep");
  if (budget == 0) fail("more values than its text could hold (aliases expanding?)");
  --budget;
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      ordered_json j = ordered_json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) fail("a mapping key is not text");
        j[kv.first.Scalar()] = yaml_to_json(kv.second, depth + 1, budget);
      }
      return j;
    }
    case YAML::NodeType::Sequence: {
      ordered_json j = ordered_json::array();
      if (n.size() > budget) fail("more values than its text could hold (aliases expanding?)");
      for (const auto& x : n) j.push_back(yaml_to_json(x, depth + 1, budget));
      return j;
    }
    case YAML::NodeType::Scalar:
      return scalar_to_json(n);
    default:
      return nullptr;
  }
}

std::string printable_name(const std::string& name) {
  // Names in messages: printable ASCII only, bounded (a message is one line).
  std::string out;
  for (char c : name) {
    if (out.size() >= 60) {
      out += "...";
      break;
    }
    out.push_back(static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7F ? c : '?');
  }
  return out;
}

// ---- the documented choice shape ----------------------------------------------------------
// A plan from outside is data: the strategy must be one of edo's (kernels::strategy_names(),
// plus "shared" and "unchanged"), its spec must parse as that strategy, and each params key is
// one the tuner writes for it (candidates.cpp), with the type it writes. Anything else (a
// strategy string carrying code, a cache_rows of 1e308 or "lots") is refused with one line.
bool is_count(const ordered_json& v) {
  if (v.is_number_unsigned()) return true;
  if (v.is_number_integer()) return v.get<int64_t>() >= 0;
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return std::isfinite(d) && d >= 0 && d <= 9007199254740992.0 && d == std::floor(d);  // exact in a double
  }
  return false;
}

void check_names(const ordered_json& v, const std::string& key, const std::string& where) {
  if (!v.is_array()) fail(where + ": params \"" + key + "\" is not a list of table names");
  for (const auto& x : v)
    if (!x.is_string()) fail(where + ": params \"" + key + "\" holds something that is not a table name");
}

// An ssd choice's params (their types already checked): both cache sizes, at most the table's
// rows, and hit rates that are shares of the same lookups.
void check_ssd_params(const ordered_json& params, uint64_t rows, const std::string& where) {
  for (const char* key : {"device_cache_rows", "host_cache_rows", "device_hit_rate", "host_hit_rate"})
    if (!params.contains(key)) fail(where + ": an ssd choice's params have no \"" + key + "\"");
  for (const char* key : {"device_cache_rows", "host_cache_rows"})
    if (rows > 0 && params[key].get<double>() > static_cast<double>(rows))
      fail(where + ": params \"" + key + "\" is larger than the table's " + std::to_string(rows) + " rows");
  const double h1 = params["device_hit_rate"].get<double>(), h2 = params["host_hit_rate"].get<double>();
  if (h1 + h2 > 1 + 1e-9) fail(where + ": params \"device_hit_rate\" plus \"host_hit_rate\" is more than 1 (shares of the same lookups)");
  if (params.contains("cache_policy") && params["cache_policy"] != "lru")
    fail(where + ": params \"cache_policy\" is not \"lru\" (the two-level replay's policy)");
}

// The params keys a choice of `strategy` may have, each with its type: 'c' a count, 's' text, 'n'
// a list of table names, 'f' a finite number >= 0, 'o' an object of finite numbers (what edo
// tune says about how a figure was obtained).
std::map<std::string, char> allowed_params(const std::string& strategy, bool row_format, const std::string& where) {
  const bool mch = strategy == "mch", ssd = strategy == "ssd";
  std::map<std::string, char> allowed = {{"same_weights_as", 's'}, {"apart_from", 'n'}, {"shared_by", 'n'}};
  if (strategy == "shared") allowed = {{"with", 's'}, {"format", 's'}};
  else if (strategy == "unchanged") allowed.clear();
  else if (strategy == "fp8") allowed["scale"] = 's';
  else if (strategy == "offload")
    allowed.insert({{"cache_rows", 'c'}, {"policy", 's'}, {"heldout", 'o'}, {"hit_rate_estimated", 's'}, {"knee_rows", 'c'}, {"cache_policy", 's'},
                    {"policy_replays", 'o'}, {"policy_headroom", 'f'}, {"policy_replays_missing", 's'}});
  else if (strategy == "pruned") allowed.insert({{"kept_rows", 'c'}, {"held_out_lost_fraction", 'f'}, {"held_out_lookups", 'c'}});
  else if (strategy == "lowrank") allowed.insert({{"rank", 'c'}, {"activation_bytes", 'c'}});
  else if (strategy == "pq") allowed.insert({{"m", 'c'}, {"k", 'c'}, {"iters", 'c'}, {"sample", 'c'}});
  else if (strategy == "multihash") allowed.insert({{"buckets", 'c'}, {"k", 'c'}});
  else if (strategy == "qr") allowed["m"] = 'c';
  else if (mch)
    allowed.insert({{"slots", 'c'}, {"policy", 's'}, {"eviction_interval", 'c'}, {"decay_exponent", 'f'}, {"hit_rate", 'f'},
                    {"insert_rate", 'f'}, {"collision_rate", 'f'}, {"eviction_rate", 'f'}, {"own_row_rate", 'f'},
                    {"module_bytes", 'c'}, {"heldout", 'o'}, {"steps_approximated", 's'}});
  else if (ssd)
    allowed.insert({{"device_cache_rows", 'c'}, {"host_cache_rows", 'c'}, {"device_hit_rate", 'f'}, {"host_hit_rate", 'f'},
                    {"ssd_reads_per_step", 'f'}, {"host_fetches_per_step", 'f'}, {"row_bytes", 'c'}, {"ssd_read_us", 'f'},
                    {"ssd_queue_depth", 'c'}, {"host_link_gbs", 'f'}, {"storage", 's'}, {"cache_policy", 's'}, {"heldout", 'o'},
                    // a trained table (ssd_candidates.h)
                    {"writebacks_per_step", 'f'}, {"ssd_writes_per_step", 'f'}, {"storage_writes", 's'}, {"optimizer", 's'},
                    {"optimizer_state_bytes", 'c'}, {"optimizer_why", 's'}});
  else if (!row_format) fail(where + ": strategy \"" + printable_name(strategy) + "\" has no documented params");
  // The training levers on a row format (llm_candidates.h): a sparse gradient, freezing.
  if (row_format)
    allowed.insert({{"gradient", 's'}, {"gradient_rows_per_step", 'c'}, {"gradient_rows_basis", 's'}, {"dense_gradient_bytes", 'c'},
                    {"sparse_gradient_bytes", 'c'}, {"optimizer_from", 's'}, {"saved_gradient_bytes", 'c'},
                    {"saved_optimizer_bytes", 'c'}, {"head", 's'}, {"saved_bytes", 'c'}, {"saved_weight_bytes", 'c'},
                    // trim_vocab (trim_candidates.h)
                    {"vocab_coverage", 's'}, {"kept_rows", 'c'}, {"unk_old_id", 'c'}, {"held_out_lookups", 'c'},
                    {"held_out_lost_lookups", 'c'}, {"saved_table_bytes", 'c'}, {"remap_bytes", 'c'}, {"head_kind", 's'}, {"saved_head_bytes", 'c'},
                    {"saved_logit_bytes_per_step", 'c'}});
  return allowed;
}

void check_choice(const std::string& strategy, const std::string& spec, const ordered_json& params, const std::string& optimizer,
                  uint64_t rows, const std::string& where) {
  const auto& names = kernels::strategy_names();
  const bool row_format = strategy == "fp32" || strategy == "fp16" || strategy == "bf16" || strategy == "fp8" ||
                          strategy == "int8" || strategy == "int4";
  // "mch": managed collision (mch_candidates.h), the table's rows in a row format behind a remap.
  const bool mch = strategy == "mch";
  // "ssd": the whole table on storage behind a device and a host cache (ssd_candidates.h), its
  // rows in a row format.
  const bool ssd = strategy == "ssd";
  const bool keyed = mch || ssd;  // not a kernels strategy: a row format in the spec
  if (!keyed && strategy != "shared" && strategy != "unchanged" && std::find(names.begin(), names.end(), strategy) == names.end()) {
    std::string all;
    for (const auto& n : names) all += n + ", ";
    fail(where + ": strategy \"" + printable_name(strategy) + "\" is not one of edo's (" + all + "mch, ssd, shared, unchanged)");
  }
  if (keyed && !spec.empty()) {
    std::string name;
    try {
      name = kernels::StrategySpec::parse(spec).name;
    } catch (const std::invalid_argument&) {
    }
    if (name != "fp32" && name != "fp16" && name != "bf16" && name != "fp8" && name != "int8" && name != "int4")
      fail(where + ": spec \"" + printable_name(spec) + "\" is not a row format (an " + strategy + " choice keeps its rows in one)");
  }
  if (!keyed && !spec.empty() && strategy != "shared" && strategy != "unchanged") {
    try {
      if (kernels::StrategySpec::parse(spec).name != strategy) fail(where + ": spec \"" + printable_name(spec) + "\" is not a " + strategy + " spec");
    } catch (const std::invalid_argument&) {
      fail(where + ": spec \"" + printable_name(spec) + "\" is not an edo strategy spec");
    }
  }
  if (!optimizer.empty() && optimizer != "rowwise_adagrad" && optimizer != "sparse_adam" && optimizer != "sparse_adagrad" &&
      optimizer != "frozen" && optimizer != "tie_head" && optimizer != "trim_vocab")
    fail(where + ": optimizer \"" + printable_name(optimizer) +
         "\" is not \"rowwise_adagrad\", \"sparse_adam\", \"sparse_adagrad\", \"frozen\", \"tie_head\", \"trim_vocab\" or empty");
  const std::map<std::string, char> allowed = allowed_params(strategy, row_format, where);
  for (auto it = params.begin(); it != params.end(); ++it) {
    auto a = allowed.find(it.key());
    if (a == allowed.end()) fail(where + ": params key \"" + printable_name(it.key()) + "\" is not one a " + strategy + " choice has");
    const ordered_json& v = it.value();
    if (a->second == 'c' && !is_count(v))
      fail(where + ": params \"" + it.key() + "\" is not a finite whole number >= 0 (at most 2^53)");
    if (a->second == 's' && !v.is_string()) fail(where + ": params \"" + it.key() + "\" is not text");
    if (a->second == 'n') check_names(v, it.key(), where);
    auto finite = [](const ordered_json& x) { return x.is_number() && std::isfinite(x.get<double>()) && x.get<double>() >= 0; };
    if (a->second == 'f' && !finite(v)) fail(where + ": params \"" + it.key() + "\" is not a finite number >= 0");
    if (a->second == 'o') {
      if (!v.is_object()) fail(where + ": params \"" + it.key() + "\" is not an object");
      for (auto f = v.begin(); f != v.end(); ++f)
        if (!finite(f.value()))
          fail(where + ": params \"" + it.key() + "\" key \"" + printable_name(f.key()) + "\" is not a finite number >= 0");
    }
  }
  if (strategy == "offload") {
    if (!params.contains("cache_rows")) fail(where + ": an offload choice's params have no \"cache_rows\"");
    const std::string policy = params.contains("policy") ? params["policy"].get<std::string>() : "lru";
    if (policy != "lru" && policy != "static") fail(where + ": params \"policy\" is \"" + printable_name(policy) + "\", not lru or static");
    if (params.contains("cache_policy") && params["cache_policy"] != "lru" && params["cache_policy"] != "lfu")
      fail(where + ": params \"cache_policy\" is not \"lru\" or \"lfu\" (FBGEMM's cache algorithms)");
    if (rows > 0 && params["cache_rows"].get<double>() > static_cast<double>(rows))
      fail(where + ": params \"cache_rows\" is larger than the table's " + std::to_string(rows) + " rows");
  }
  if (ssd) check_ssd_params(params, rows, where);
  if (mch) {
    if (!params.contains("slots") || params["slots"].get<double>() < 2) fail(where + ": an mch choice's params need \"slots\" >= 2");
    if (params.contains("policy")) {
      try {
        mch_policy_from_name(params["policy"].get<std::string>());
      } catch (const std::invalid_argument& e) {
        fail(where + ": params \"policy\": " + e.what());
      }
    }
    if (params.contains("eviction_interval") && params["eviction_interval"].get<double>() < 1)
      fail(where + ": params \"eviction_interval\" is 0 (at least 1 step)");
  }
  if (strategy == "fp8" && params.contains("scale") && params["scale"] != "row") fail(where + ": params \"scale\" is not \"row\"");
}

// A table's "sharding" in a plan over `devices` devices: its type, its shards (device, first
// row or column, how many, bytes, lookups per step) and the "devices" list the shards name.
void read_sharding(const ordered_json& t, uint32_t devices, TuneChoice& ch, const std::string& where) {
  auto it = t.find("sharding");
  if (it == t.end() || it->is_null()) {
    if (devices > 1) fail(where + " has no \"sharding\" (the plan is for " + std::to_string(devices) + " devices)");
    return;
  }
  if (devices <= 1) fail(where + " has a \"sharding\" but the plan is for one device");
  const std::string what = where + ": \"sharding\"";
  if (!it->is_object()) fail(what + " is not an object");
  ch.sharding = get_string(*it, "type", what);
  if (ch.sharding != "table_wise" && ch.sharding != "row_wise" && ch.sharding != "column_wise")
    fail(what + " type \"" + printable_name(ch.sharding) + "\" is not table_wise, row_wise or column_wise");
  const ordered_json& list = field(*it, "devices", what);
  const ordered_json& shards = field(*it, "shards", what);
  if (!list.is_array() || !shards.is_array() || shards.empty() || list.size() != shards.size())
    fail(what + " needs \"devices\" and \"shards\" lists of the same length (at least one)");
  if (ch.sharding == "table_wise" && shards.size() != 1) fail(what + " is table_wise but has " + std::to_string(shards.size()) + " shards");
  std::set<uint64_t> seen;
  uint64_t bytes = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    const ordered_json& sh = shards[i];
    const std::string w = what + " shard " + std::to_string(i);
    if (!sh.is_object()) fail(w + " is not an object");
    model::TuneShard s;
    fields_from_json(sh, s, model::kTuneShardFields, w);
    const uint64_t device = s.device;
    if (device >= devices) fail(w + ": device " + std::to_string(device) + " is not one of the plan's " + std::to_string(devices));
    if (!list[i].is_number_unsigned() || list[i].get<uint64_t>() != device) fail(w + ": its device is not \"devices\"[" + std::to_string(i) + "]");
    if (!seen.insert(device).second) fail(what + " puts two shards on device " + std::to_string(device));
    if (s.device_bytes > UINT64_MAX - bytes) fail(w + ": the shards' bytes overflow");
    bytes += s.device_bytes;
    ch.shards.push_back(s);
  }
  // A tied table follows its owner's shards and holds nothing itself.
  if (bytes != ch.device_bytes)
    fail(what + ": the shards hold " + std::to_string(bytes) + " bytes, the table " + std::to_string(ch.device_bytes));
}
// The plan's header: budget, machine, the baseline's and the plan's totals.
void read_totals(const ordered_json& doc, TuneResult& r) {
  fields_from_json(doc, r, kPlanHeadFields, "the plan");
  if (r.backend != "cpu" && r.backend != "cuda") fail("backend \"" + printable_name(r.backend) + "\" is neither cpu nor cuda");
  if (r.weights != "recorded" && r.weights != "synthetic" && r.weights != "mixed")
    fail("weights \"" + printable_name(r.weights) + "\" is not recorded, synthetic or mixed");
  const ordered_json& base = field(doc, "baseline", "the plan");
  if (!base.is_object()) fail("\"baseline\" is not an object");
  fields_from_json(base, r, kPlanBaselineFields, "baseline");
  const ordered_json& plan = field(doc, "plan", "the plan");
  if (plan.is_object()) {
    r.feasible = true;
    fields_from_json(plan, r, kPlanTotalsFields, "plan");
  } else if (!plan.is_null()) {
    fail("\"plan\" is neither an object nor null");
  }
}

// How the run went and its options (added keys: plans written before each have its default).
void read_run(const ordered_json& doc, TuneResult& r) {
  const bool feasible = r.feasible;  // whether "plan" is an object (read_totals)
  // Plans written before objectives were recorded were the fastest within the error limit (the
  // member's default); an unknown objective, stop reason or timing kind is refused by its enum.
  fields_from_json(doc, r, kPlanRunFields, "the plan");
  if (r.feasible != feasible) fail("\"feasible\" disagrees with \"plan\"");
  // Plans written before the timing was recorded were measured on their backend's device.
  r.timing_device = r.device;
  if (doc.contains("timing")) {
    const ordered_json& timing = field(doc, "timing", "the plan");
    if (!timing.is_object()) fail("\"timing\" is not an object");
    fields_from_json(timing, r, kPlanTimingFields, "timing");
  }
  if (auto it = doc.find("notes"); it != doc.end()) {
    if (!it->is_array()) fail("\"notes\" is not a list");
    for (const auto& n : *it) {
      if (!n.is_string()) fail("a note is not text");
      r.notes.push_back(n.get<std::string>());
    }
  }
  fields_from_json(doc, r, kPlanTailFields, "the plan");
}

// A table as recorded (its declared keys, tune_fields.h) and the keys that only say what the
// plan assumes of training (checked, derived again on export).
TuneTable read_recorded_table(const ordered_json& t, const std::string& name, const std::string& weights, const std::string& where) {
  TuneTable tt;
  tt.name = name;
  fields_from_json(t, tt, model::kTuneTableFields, where);
  // Plans written before "training" was: a table trains when its optimizer's state was recorded.
  if (!t.contains("training")) tt.training = !tt.optimizer.empty();
  if (auto du = t.find("dense_use"); du != t.end() && !du->is_null()) tt.dense_use = get_string(t, "dense_use", where);
  if (auto tp = t.find("train_precision"); tp != t.end() && !tp->is_null()) {
    if (!tp->is_object() || tp->value("optimizer_state", "") != "fp32" || tp->value("rounding", "") != "stochastic")
      fail(where + ": \"train_precision\" is not {\"optimizer_state\": \"fp32\", \"rounding\": \"stochastic\"}");
  }
  if (auto gr = t.find("gradient"); gr != t.end() && !gr->is_null() && !(gr->is_string() && (*gr == "sparse" || *gr == "dense" || *gr == "none")))
    fail(where + ": \"gradient\" is not \"sparse\" or \"dense\" (or \"none\": frozen)");
  if (auto sl = t.find("strategy_label"); sl != t.end() && !sl->is_null()) (void)get_string(t, "strategy_label", where);
  tt.weights = weights;
  return tt;
}

// The step time's interval, phases and source of a candidate (each null when unknown).
void read_step_timing(const ordered_json& t, TuneCandidate& c, const std::string& where) {
  if (auto iv = t.find("step_us_interval"); iv != t.end() && !iv->is_null()) {
    if (!iv->is_array() || iv->size() != 2 || !(*iv)[0].is_number() || !(*iv)[1].is_number() ||
        !((*iv)[0].get<double>() <= (*iv)[1].get<double>()))
      fail(where + ": \"step_us_interval\" is not a [low, high] pair of step times");
    c.step_us_lo = (*iv)[0].get<double>();
    c.step_us_hi = (*iv)[1].get<double>();
  }
  if (auto sc = t.find("step_covers"); sc != t.end() && sc->is_string()) c.step_covers = sc->get<std::string>();
  if (auto ph = t.find("step_phases_us"); ph != t.end() && !ph->is_null()) {
    auto phase = [&](const char* k) {
      auto it = ph->find(k);
      if (!ph->is_object() || it == ph->end() || !it->is_number() || !(it->get<double>() >= 0))
        fail(where + ": \"step_phases_us\" needs \"forward\", \"backward\" and \"update\" times >= 0");
      return it->get<double>();
    };
    c.forward_us = phase("forward");
    c.backward_us = phase("backward");
    c.update_us = phase("update");
  }
  if (auto ts = t.find("timing_source"); ts != t.end() && !ts->is_null()) {
    const std::string what = where + ": \"timing_source\"";
    if (!ts->is_object()) fail(what + " is not an object");
    const std::string kind = get_string(*ts, "kind", what);
    const std::optional<model::TimingKind> timing_kind = model::from_string<model::TimingKind>(kind);
    if (!timing_kind || *timing_kind == model::TimingKind::kNone)
      fail(what + " kind \"" + printable_name(kind) + "\" is not measured, twin or predicted");
    c.timing_kind = *timing_kind;
    c.timing_from = opt_string(*ts, "from", what);
  }
}

// The chosen candidate of a table that is not "unchanged": `c` holds its declared keys and
// what every entry has (error, needs_retraining, hit_rate, validated).
TuneCandidate read_candidate(const ordered_json& t, TuneCandidate c, const std::string& strategy, const ordered_json& params,
                             const TuneChoice& ch, const std::string& where) {
  c.table = ch.shares_with.empty() ? ch.table : ch.shares_with;
  c.strategy = strategy;
  // The cache algorithm of an offload (plans written before it was recorded have none: FBGEMM's
  // default, LRU, is what they ran); it travels in the params, where the exports read it.
  ordered_json with_policy = params;
  if (auto cp = t.find("cache_policy"); cp != t.end() && !cp->is_null()) {
    if (!cp->is_string() || (*cp != "lru" && *cp != "lfu"))
      fail(where + ": \"cache_policy\" is not \"lru\" or \"lfu\" (FBGEMM's cache algorithms); write one of them or null");
    if (strategy != "offload") fail(where + ": \"cache_policy\" is set on a table that is not offloaded; set it to null");
    with_policy["cache_policy"] = *cp;
  }
  c.params = model::params_from_json(with_policy);
  c.device_bytes = ch.device_bytes;
  c.host_bytes = ch.host_bytes;
  c.ssd_bytes = ch.ssd_bytes;
  c.step_us = ch.step_us;
  // Not validated: no error was measured on held-out lookups (null in the file); the plan
  // took it at --allow-unvalidated, so it stays plannable with no loss of its own.
  if (!c.validated && std::isnan(c.error)) c.error = 0.0;
  c.measured = true;
  if (t.contains("measured_rows")) c.measured_rows = get_u64(t, "measured_rows", where);
  read_step_timing(t, c, where);
  return c;
}

// The choice's own keys: its bytes (declared), tier, time, reason and sharding.
TuneChoice read_choice(const ordered_json& t, const std::string& name, const std::string& strategy, const TuneResult& r,
                       const std::string& where) {
  TuneChoice ch;
  ch.table = name;
  fields_from_json(t, ch, model::kTuneChoiceFields, where);
  // Plans written before the SSD tier have nothing on it; the tier, when given, is the strategy's.
  if (t.contains("ssd_bytes")) ch.ssd_bytes = get_u64(t, "ssd_bytes", where);
  if (auto tier = t.find("tier"); tier != t.end() && !tier->is_null()) {
    model::TuneCandidate probe;
    probe.strategy = strategy == "shared" || strategy == "unchanged" ? std::string() : strategy;
    const std::string expected(model::tier_of(probe));
    if (!tier->is_string() || (strategy != "shared" && *tier != expected))
      fail(where + ": \"tier\" is not \"" + expected + "\", the tier of a " + printable_name(strategy) + " choice");
  }
  ch.step_us = get_number(t, "step_us", where, true, 0.0);
  ch.why = get_string(t, "why", where);
  if (r.feasible) read_sharding(t, r.devices, ch, where);
  return ch;
}

// Entry i of "tables": the table, its choice and (unless unchanged) its candidate.
void read_table_entry(const ordered_json& t, size_t i, std::set<std::string>& names, TuneResult& r) {
  std::string where = "table " + std::to_string(i);
  if (!t.is_object()) fail(where + " is not an object");
  const std::string name = get_string(t, "name", where);
  where = "table \"" + printable_name(name) + "\"";
  if (!names.insert(name).second) fail(where + " is listed twice");
  TuneTable tt = read_recorded_table(t, name, r.weights, where);
  const std::string strategy = get_string(t, "strategy", where);
  const ordered_json& params = field(t, "params", where);
  if (!params.is_object()) fail(where + ": \"params\" is not an object");
  TuneCandidate declared;
  fields_from_json(t, declared, model::kTuneCandidateFields, where);
  declared.validated = t.contains("validated") ? get_bool(t, "validated", where) : true;
  declared.error = get_number(t, "error", where, true, std::numeric_limits<double>::quiet_NaN());
  declared.needs_retraining = get_bool(t, "needs_retraining", where);
  declared.hit_rate = opt_number(t, "hit_rate", where, 0, 1);
  check_choice(strategy, declared.spec, params, declared.optimizer, tt.rows, where);
  TuneChoice ch = read_choice(t, name, strategy, r, where);
  if (strategy == "shared") {
    auto with = params.find("with");
    if (with == params.end() || !with->is_string()) fail(where + ": a shared table's params have no \"with\" table");
    ch.shares_with = with->get<std::string>();
    tt.shares_with = ch.shares_with;
    if (ch.shares_with == name) fail(where + " is shared with itself");
  }
  if (strategy != "unchanged") {
    ch.candidate = static_cast<int64_t>(r.candidates.size());
    r.candidates.push_back(read_candidate(t, std::move(declared), strategy, params, ch, where));
  } else {
    tt.tuned = false;
  }
  r.tables.push_back(std::move(tt));
  r.choices.push_back(std::move(ch));
}

// Each device's totals are its shards' (per_device, when given, must say the same) and within
// the budget.
void check_devices(const ordered_json& doc, const TuneResult& r) {
  std::vector<uint64_t> held(r.devices, 0);
  for (const auto& ch : r.choices)
    for (const auto& s : ch.shards) held[s.device] += s.device_bytes;
  for (uint32_t d = 0; d < r.devices; ++d)
    if (held[d] > r.budget_bytes)
      fail("device " + std::to_string(d) + " holds " + std::to_string(held[d]) + " bytes, more than the budget of " +
           std::to_string(r.budget_bytes) + " per device");
  if (auto per = doc.find("per_device"); per != doc.end()) {
    if (!per->is_array() || per->size() != r.devices) fail("\"per_device\" is not a list of one entry per device");
    for (size_t d = 0; d < per->size(); ++d) {
      const std::string w = "per_device " + std::to_string(d);
      if (!(*per)[d].is_object()) fail(w + " is not an object");
      if (get_u64((*per)[d], "device", w) != d) fail(w + " is not device " + std::to_string(d));
      if (get_u64((*per)[d], "device_bytes", w) != held[d])
        fail(w + ": device_bytes disagrees with its shards (" + std::to_string(held[d]) + " bytes)");
    }
  }
}

}  // namespace

TuneResult plan_from_json(const ordered_json& doc) {
  if (!doc.is_object()) fail("the document is not an object");
  auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string()) fail("no \"schema\" (expected \"" + std::string(kPlanSchema) + "\")");
  if (schema->get<std::string>() != kPlanSchema)
    fail("schema \"" + printable_name(schema->get<std::string>()) + "\" is not \"" + kPlanSchema + "\" (written by another edo version?)");
  TuneResult r;
  read_totals(doc, r);
  read_run(doc, r);
  const ordered_json& tables = field(doc, "tables", "the plan");
  if (!tables.is_array()) fail("\"tables\" is not a list");
  if (!r.feasible && !tables.empty()) fail("an infeasible plan (\"plan\": null) lists tables");
  std::set<std::string> names;
  for (size_t i = 0; i < tables.size(); ++i) read_table_entry(tables[i], i, names, r);
  for (const auto& ch : r.choices)
    if (!ch.shares_with.empty() && !names.count(ch.shares_with))
      fail("table \"" + printable_name(ch.table) + "\" is shared with \"" + printable_name(ch.shares_with) + "\", which the plan does not list");
  if (r.feasible && r.devices > 1) check_devices(doc, r);
  const ordered_json& frontier = field(doc, "frontier", "the plan");
  if (!frontier.is_array()) fail("\"frontier\" is not a list");
  for (const auto& p : frontier) {
    if (!p.is_array() || p.size() != 2) fail("a frontier point is not a [bytes, step_us] pair");
    ordered_json pair = {{"b", p[0]}, {"t", p[1]}};
    r.frontier.emplace_back(get_u64(pair, "b", "a frontier point"), get_number(pair, "t", "a frontier point", false, 0));
  }
  return r;
}

ordered_json plan_document_from_text(const std::string& text) {
  if (text.size() > kMaxText) fail("larger than " + std::to_string(kMaxText >> 20) + " MiB");
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) fail("the document is empty");
  ordered_json doc;
  if (text[first] == '{') {
    check_flow_depth(text);
    try {
      doc = ordered_json::parse(text);
    } catch (const ordered_json::exception& e) {
      fail(std::string("JSON: ") + e.what());
    }
  } else {
    check_flow_depth(text);
    check_indent(text);
    try {
      size_t budget = max_items(text);
      doc = yaml_to_json(YAML::Load(text), 0, budget);
    } catch (const YAML::Exception& e) {
      std::string what = e.what();
      for (char& c : what)
        if (c == '\n') c = ' ';
      fail("YAML: " + what);
    }
  }
  return doc;
}

TuneResult plan_from_text(const std::string& text) { return plan_from_json(plan_document_from_text(text)); }

}  // namespace edo::tuner
