// The plan as documents: `edo tune --json` and `edo export` (JSON, YAML, TorchRec Python), and
// plan import (reading a JSON or YAML plan back, e.g. `edo export plan.json --format torchrec`).
//
// Table names are data, never code: JSON and YAML quote them (exact bytes; invalid UTF-8 is
// replaced by U+FFFD in JSON and YAML, which cannot carry it), the TorchRec file holds them only
// inside Python string literals (every character outside printable ASCII escaped) and never in
// a comment.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "edo/model/tune.h"

namespace edo::tuner {

inline constexpr const char* kPlanSchema = "edo.plan/1";

// A plan document that does not parse or does not have the edo.plan/1 shape. One line naming
// what is wrong and where.
class PlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The edo.plan/1 object (`edo tune --json`):
//   {"schema","budget_bytes","max_error","backend","device","weights","baseline":{device_bytes,
//    step_us},"plan":{device_bytes,step_us},"tables":[{name,strategy,params,device_bytes,host_bytes,
//    step_us,error,hit_rate,needs_retraining,why}],"frontier":[[bytes,us]...],"candidates_measured"}
// plus added keys (feasible, min_feasible_bytes, complete, notes...). NaN and infinite numbers
// are written as null.
nlohmann::ordered_json plan_to_json(const model::TuneResult& result);
std::string plan_to_json_text(const model::TuneResult& result);  // 2-space indented, newline at the end
std::string plan_to_yaml(const model::TuneResult& result);       // the same content
// Python for TorchRec's planner: `constraints` (name -> ParameterConstraints with compute
// kernel and cache parameters), `data_types` (name -> DataType for EmbeddingBagConfig), and
// `edo_only` (name -> the edo strategy, for choices TorchRec has no kernel for).
std::string plan_to_torchrec(const model::TuneResult& result);

// What a recording knows about one table for TorchRec's planner (torchrec_facts.h computes it
// from a recording; a plan file has none). Missing facts leave their keys out.
struct TorchRecFacts {
  std::string config;                 // EmbeddingBagConfig.name as recorded ("": the module-path rule)
  std::vector<std::string> features;  // its feature_names
  uint64_t lookups = 0;               // rows read (all features)
  uint64_t bags = 0;                  // bags pooled (0: not recorded, e.g. an EmbeddingCollection)
  uint64_t steps = 0;                 // recorded steps (0: none)
  // Per feature (same order as `features`), from the KeyedJaggedTensor the collection was
  // called with: ids read (the sum of the feature's lengths) and bags (its batch sizes). Empty
  // when the hook saw no KeyedJaggedTensor (an older recording): the table's average is used.
  std::vector<uint64_t> feature_lookups;
  std::vector<uint64_t> feature_bags;
  uint64_t rows = 0;                  // the table's rows (EmbeddingOffloadStats' height)
  // TorchRec's CacheStatistics. miss_curve: (load factor, miss rate) of an LRU cache of that
  // share of the rows, the miss rate over ALL lookups, first reads (compulsory misses)
  // included: on the held-out part of the recorded stream with the cache warm from the rest
  // (heldout, tuner/src/replay/cache_replay.h: the rate edo's plan scores offloads by), else over the
  // whole recording. expected_lookups: lookups a step (TorchRec multiplies it by the miss rate:
  // the product is the rows fetched a step, edo's count); distinct_lookups: the distinct rows a
  // step (Che's approximation, the meaning TorchRec's docstring gives expected_lookups);
  // cacheability: the area under miss_curve. expected_lookups < 0: no curve.
  double expected_lookups = -1;
  double distinct_lookups = -1;
  std::vector<std::pair<double, double>> miss_curve;
  double cacheability = 0;
  bool heldout = false;
};
// Che's approximation: the distinct rows among `window` consecutive lookups of a stream whose
// LRU hit rate at x cache rows is `hit` ((rows, hit rate) points, x ascending): the D with
// integral_0^D dx / (1 - hit(x)) = window, at most `rows` (TorchRec's expected_lookups).
double distinct_in_window(const std::vector<std::pair<double, double>>& hit, double window, double rows);
// The same, with what the recording knows (table name -> facts): keys by the recorded config
// name, feature_names, pooling_factors / num_poolings / batch_sizes, CacheParams.stats.
std::string plan_to_torchrec(const model::TuneResult& result, const std::map<std::string, TorchRecFacts>& facts);

// The one export function of `edo export` and the dashboard's Export buttons: the plan as the
// document of `format`, "json" (plan_to_json_text), "yaml" (plan_to_yaml) or "torchrec"
// (plan_to_torchrec with `facts`, what the recording knows; the other formats do not read
// them). Throws std::invalid_argument naming the formats for any other.
std::string plan_document(const model::TuneResult& result, const std::string& format,
                          const std::map<std::string, TorchRecFacts>& facts = {});

// Plan import: a JSON or YAML edo.plan/1 document back into a result (tables, choices, one
// candidate per chosen table, frontier). Throws PlanError. Inputs may be hostile: bounded
// recursion, sizes checked, never a crash.
model::TuneResult plan_from_json(const nlohmann::ordered_json& doc);
model::TuneResult plan_from_text(const std::string& text);  // JSON when it starts with '{', else YAML

// Quotes `s` as a Python string literal: only printable ASCII stays as is; quotes, backslashes
// and everything else are escaped (\n, \xNN, \uNNNN, \UNNNNNNNN; invalid UTF-8 bytes as U+FFFD).
std::string python_string(const std::string& s);

}  // namespace edo::tuner
