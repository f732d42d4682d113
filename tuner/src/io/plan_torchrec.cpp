// The plan as Python for TorchRec's sharding planner. Everything recorded (table names, the
// device, strategy specs) appears only inside string literals built by python_string(); the
// rest of the file is fixed text, so no recorded name can become code.
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "edo/tuner/plan_io.h"
#include "cache_policies.h"
#include "plan_torchrec_text.h"
#include "torchrec_key_value.h"

namespace edo::tuner {

using model::TuneCandidate;
using model::TuneResult;
using model::TuneTable;

namespace {

std::string python_number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// TorchRec's DataType member for an edo row format, or "" when FBGEMM has no kernel for it.
// FBGEMM trains FP32 and FP16 weights (SplitTableBatchedEmbeddingBagsCodegen: weights_precision
// FP32/FP16); its inference kernels (IntNBitTableBatchedEmbeddingBagsCodegen) read FP32, FP16,
// FP8, INT8, INT4 and INT2 rows. BF16 is neither; int8/int4 are not trainable.
std::string data_type_of(const std::string& strategy, bool training, std::string& why_not) {
  if (strategy == "fp32" || strategy == "offload") return "FP32";  // edo's offload keeps fp32 rows on the host
  if (strategy == "fp16") return "FP16";
  if (strategy == "int8" || strategy == "int4") {
    if (!training) return strategy == "int8" ? "INT8" : "INT4";
    why_not = strategy + " rows are inference-only in FBGEMM (it trains FP32/FP16 weights)";
    return "";
  }
  if (strategy == "fp8") {
    // TorchRec's DataType (torchrec/types.py, pytorch/torchrec a48cef79) has FP32, FP16, BF16,
    // INT64, INT32, INT8, UINT8, INT4, INT2 and NFP8: no FP8. NFP8 is converted to
    // SparseType.NFP8 (data_type_to_sparse_type), a scale-less e4m3 that FBGEMM's inference
    // kernel has no row format for (unpadded_row_size_in_bytes, FBGEMM 71d6f8b22, lists FP32, FP16,
    // FP8, INT8, INT4, INT2); FBGEMM's own inference SparseType.FP8 has no DataType to reach it.
    why_not = training ? "fp8 rows are not trainable through TorchRec: its DataType has no FP8 member (NFP8 is a scale-less "
                         "e4m3, edo's fp8 keeps a per-row scale) and FBGEMM trains FP32/FP16 weights"
                       : "TorchRec's DataType has no FP8 member: DataType.NFP8 becomes SparseType.NFP8, which FBGEMM's "
                         "inference kernel (IntNBitTableBatchedEmbeddingBagsCodegen) has no row format for, and "
                         "SparseType.FP8 (FBGEMM's inference fp8) has no DataType";
    return "";
  }
  if (strategy == "bf16") {
    why_not = "FBGEMM has no BF16 weights (training: FP32/FP16; inference: FP32/FP16/FP8/INT8/INT4/INT2)";
    return "";
  }
  why_not = "TorchRec has no kernel for it";
  return "";
}

// TorchRec keys constraints by the table's config name (EmbeddingBagConfig.name): an
// EmbeddingBagCollection / EmbeddingCollection holds one module per config in its
// `embedding_bags` / `embeddings` ModuleDict, keyed by that name, so the recorded module path
// ends in ".embedding_bags.NAME" / ".embeddings.NAME". Other paths are kept whole.
std::string config_name_of(const std::string& path) {
  for (const char* dict : {"embedding_bags.", "embeddings."}) {
    const std::string d = dict;
    size_t at = path.rfind("." + d);
    size_t start = at == std::string::npos ? (path.rfind(d, 0) == 0 ? 0 : std::string::npos) : at + 1;
    if (start == std::string::npos) continue;
    const std::string rest = path.substr(start + d.size());
    if (!rest.empty() && rest.find('.') == std::string::npos) return rest;
  }
  return path;
}

// The rows a pruned table keeps (params "kept_rows"), 0 when absent.
uint64_t kept_rows_of(const TuneCandidate& c) { return c.params.kept_rows.value_or(0); }

// A managed-collision choice (mch_candidates.h) as the arguments of TorchRec's
// MCHManagedCollisionModule (torchrec 1.9.2 torchrec/modules/mc_modules.py line 1089: zch_size,
// eviction_policy, eviction_interval, input_hash_size) and the rates edo predicts for it.
std::string mch_module_of(const TuneCandidate& c, uint64_t rows) {
  const model::StrategyParams& p = c.params;
  const std::string policy = p.policy.value_or("distance_lfu");
  const char* cls = policy == "lfu" ? "LFU_EvictionPolicy" : policy == "lru" ? "LRU_EvictionPolicy" : "DistanceLFU_EvictionPolicy";
  std::string s = "{\"zch_size\": " + std::to_string(p.slots.value_or(0)) + ", \"eviction_policy\": \"" + cls +
                  "\", \"decay_exponent\": " + python_number(p.decay_exponent.value_or(1.0)) +
                  ", \"eviction_interval\": " + std::to_string(p.eviction_interval.value_or(1)) +
                  ", \"input_hash_size\": " + std::to_string(rows) + ", \"predicted\": {";
  const std::pair<const char*, std::optional<double>> rates[] = {{"hit_rate", p.hit_rate},
                                                                 {"insert_rate", p.insert_rate},
                                                                 {"collision_rate", p.collision_rate},
                                                                 {"eviction_rate", p.eviction_rate},
                                                                 {"own_row_rate", p.own_row_rate}};
  for (size_t i = 0; i < 5; ++i) {
    const double v = rates[i].second.value_or(0.0);
    s += std::string(i ? ", " : "") + "\"" + rates[i].first + "\": " + python_number(std::isfinite(v) ? v : 0.0);
  }
  return s + "}}";
}

double cache_load_factor(const TuneCandidate& c, uint64_t rows) {
  if (c.params.cache_rows && rows > 0) return static_cast<double>(*c.params.cache_rows) / static_cast<double>(rows);
  return 0.0;
}

bool lru_policy(const TuneCandidate& c) {
  return c.params.policy != "static";
}

// Python list of numbers / strings.
std::string number_list(const std::vector<double>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v[i]);  // round trip: pooling factors are exact ratios
    std::string x = buf;
    if (x.find_first_of(".eni") == std::string::npos) x += ".0";  // a float literal, as TorchRec types them
    out += (i ? ", " : "") + x;
  }
  return out + "]";
}

std::string string_list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + python_string(v[i]);
  return out + "]";
}

// The workload part of a table's ParameterConstraints: its features, and per feature the
// pooling factor (ids read per bag), one pooling per sample (an EmbeddingBag pools each feature
// of a sample once) and the batch size (bags per step). TorchRec's planner reads them per
// feature (ParameterConstraints: pooling_factors, num_poolings and batch_sizes "must match in
// length, as per sample", torchrec/distributed/planner/types.py in torchrec 1.9.2). The hook
// counts them per feature from the KeyedJaggedTensor's lengths; a recording made before it did
// has the table's lookups and bags only, and every feature then gets the table's average.
std::string workload_of(const TorchRecFacts* f) {
  if (!f || f->features.empty()) return "";
  std::string out = "        feature_names=" + string_list(f->features) + ",\n";
  const size_t n = f->features.size();
  const bool per_feature = f->feature_lookups.size() == n && f->feature_bags.size() == n &&
                           std::all_of(f->feature_bags.begin(), f->feature_bags.end(), [](uint64_t b) { return b > 0; });
  std::vector<double> pooling(n), bags(n);
  if (per_feature) {
    for (size_t i = 0; i < n; ++i) {
      pooling[i] = static_cast<double>(f->feature_lookups[i]) / static_cast<double>(f->feature_bags[i]);
      bags[i] = static_cast<double>(f->feature_bags[i]);
    }
  } else if (f->bags > 0) {
    pooling.assign(n, static_cast<double>(f->lookups) / static_cast<double>(f->bags));
    bags.assign(n, static_cast<double>(f->bags) / static_cast<double>(n));
  } else {
    return out;
  }
  out += "        pooling_factors=" + number_list(pooling) + ",\n";
  out += "        num_poolings=" + number_list(std::vector<double>(n, 1.0)) + ",\n";
  if (f->steps > 0) {
    std::string sizes = "[";
    for (size_t i = 0; i < n; ++i)
      sizes += (i ? ", " : "") + std::to_string(std::llround(bags[i] / static_cast<double>(f->steps)));
    out += "        batch_sizes=" + sizes + "],\n";
  }
  return out;
}

// CacheParams' stats: an EdoCacheStatistics (fixed text in the file) from the recorded curve.
// `at` (a load factor > 0, and the miss rate edo's plan measured there) is put into the curve,
// replacing a point at the same load factor: the plan's own held-out figure, exact at the load
// factor the plan exports.
std::string statistics_of(const TorchRecFacts* f, std::optional<std::pair<double, double>> at = std::nullopt) {
  if (!f || f->expected_lookups < 0 || f->miss_curve.empty()) return "";
  std::vector<std::pair<double, double>> pts = f->miss_curve;
  if (at && at->first > 0 && at->first < 1 && std::isfinite(at->second)) {
    std::erase_if(pts, [&](const auto& p) { return std::abs(p.first - at->first) <= 1e-12 * at->first; });
    pts.insert(std::upper_bound(pts.begin(), pts.end(), *at, [](const auto& a, const auto& b) { return a.first < b.first; }),
               {at->first, std::clamp(at->second, 0.0, 1.0)});
  }
  std::string curve = "[";
  for (size_t i = 0; i < pts.size(); ++i)
    curve += (i ? ", " : "") + std::string("(") + python_number(pts[i].first) + ", " + python_number(pts[i].second) + ")";
  curve += "]";
  return "EdoCacheStatistics(" + python_number(f->expected_lookups) + ", " + curve + ", " + python_number(f->cacheability) + ", " +
         std::to_string(f->rows) + ", " + (f->heldout ? "True" : "False") + ", " +
         python_number(std::max(0.0, f->distinct_lookups)) + ")";
}

std::string stats_of(const TorchRecFacts* f, std::optional<std::pair<double, double>> at) {
  const std::string s = statistics_of(f, at);
  return s.empty() ? s : ", stats=" + s;
}

// TorchRec's CacheAlgorithm member for an offload's cache policy: the one place it is written
// (a plan's params "cache_policy": "lru" or "lfu", LRU when absent: FBGEMM's
// CacheAlgorithm.LRU / LFU, fbgemm_gpu/split_table_batched_embeddings_ops_common.py).
std::string cache_algorithm_of(const TuneCandidate& c) {
  return c.params.cache_policy == "lfu" ? "LFU" : "LRU";
}

// The miss rate the plan measured for an offload at its cache (held out when it was), for
// EdoCacheStatistics at the exported load factor.
std::optional<std::pair<double, double>> measured_miss_of(const TuneCandidate& c, double load_factor) {
  const std::optional<double> hit = c.heldout_hit_rate ? c.heldout_hit_rate : c.hit_rate;
  if (!hit || !std::isfinite(*hit) || !(load_factor > 0)) return std::nullopt;
  return std::make_pair(load_factor, 1.0 - *hit);
}

// An ssd choice's TorchRec data type and sizes (torchrec_key_value.h); why_not (and no data
// type) when TorchRec cannot serve it from SSD. FBGEMM's SSD TBE keeps FP32 or FP16 rows
// (SSDTableBatchedEmbeddingBags asserts weights_precision FP32/FP16, fbgemm_gpu/tbe/ssd/
// training.py). An inference table keeps its sizes (key_value_tables) without a constraint: the
// quant sharders an inference plan is for have no key-value kernel.
std::optional<KeyValueSizing> ssd_choice(const TuneCandidate& c, const model::TuneTable* t, std::string& dt, std::string& why_not) {
  if (!t) {
    why_not = "the table is not in the plan";
    return std::nullopt;
  }
  dt = data_type_of(ssd_row_format(c, *t), true, why_not);
  if (dt.empty()) return std::nullopt;
  auto kv = key_value_sizing(c.params, t->rows, t->dim, dt == "FP16" ? 2 : 4, why_not);
  if (!kv || !t->training) dt.clear();
  if (kv && !t->training)
    why_not = "TorchRec's inference (quant) sharders have no key-value kernel (BaseQuantEmbeddingSharder.compute_kernels: quant, "
              "quant_uvm, quant_uvm_caching; torchrec 1.9.2 torchrec/distributed/embedding_types.py line 675); key_value_tables "
              "has its KeyValueParams for serving it unquantized through EmbeddingBagCollectionSharder";
  return kv;
}

// The key-value part of an ssd table's ParameterConstraints: KeyValueParams, whose fields reach
// the SSD TBE as fused params (torchrec/distributed/utils.py line 493-504). No CacheParams: a
// load factor does not reach a key-value table's TBE (torchrec_key_value.h).
std::string key_value_constraint(const KeyValueSizing& kv) {
  return "        key_value_params=KeyValueParams(max_l1_cache_size=" + std::to_string(kv.max_l1_cache_mb) +
         ", l2_cache_size=" + std::to_string(kv.l2_cache_gb) + "),\n";
}

// key_value_tables' entry: the sizes exported and the replay they come from (params of the ssd
// candidate: hit rates of each level and the SSD reads a step, NaN-free numbers only).
// A trained table's entry names the optimizer TorchRec must train it with ("optimizer") and,
// when the job's was another, why it changes (the candidate's "optimizer_why").
std::string key_value_entry(const TuneCandidate& c, const KeyValueSizing& kv, bool in_constraints, bool training) {
  const model::StrategyParams& p = c.params;
  std::string s = "{\"device_cache_rows\": " + std::to_string(kv.device_cache_rows) +
                  ", \"host_cache_rows\": " + std::to_string(kv.host_cache_rows) +
                  ", \"l1_rows\": " + std::to_string(kv.l1_sets * kFbgemmWays) +
                  ", \"max_l1_cache_size_mb\": " + std::to_string(kv.max_l1_cache_mb) +
                  ", \"l2_cache_size_gb\": " + std::to_string(kv.l2_cache_gb) +
                  ", \"in_constraints\": " + (in_constraints ? "True" : "False");
  if (training) {
    s += ", \"optimizer\": \"EXACT_ROWWISE_ADAGRAD\"";
    if (p.optimizer_why) s += ", \"optimizer_why\": " + python_string(*p.optimizer_why);
  }
  s += ", \"replayed\": {";
  const std::pair<const char*, std::optional<double>> replayed[] = {{"device_hit_rate", p.device_hit_rate},
                                                                    {"host_hit_rate", p.host_hit_rate},
                                                                    {"ssd_reads_per_step", p.ssd_reads_per_step},
                                                                    {"writebacks_per_step", p.writebacks_per_step},
                                                                    {"ssd_writes_per_step", p.ssd_writes_per_step}};
  bool first = true;
  for (const auto& [k, v] : replayed)
    if (v && std::isfinite(*v)) {
      s += std::string(first ? "" : ", ") + "\"" + k + "\": " + python_number(*v);
      first = false;
    }
  return s + "}}";
}

// The sharding part of a table's ParameterConstraints in a plan over several devices: the one
// sharding type edo's placement chose (TorchRec's ShardingType values "table_wise", "row_wise",
// "column_wise"; its planner still picks the ranks and weighs communication) and, for
// column-wise, min_partition: the width of edo's shards (TorchRec searches widths from it up to
// the dim that divide the dim and are divisible by 4: torchrec/distributed/planner/types.py,
// ParameterConstraints, pytorch/torchrec a48cef79). ParameterConstraints has no field for
// ranks: those are in the file's edo_placement only.
std::string sharding_of(const model::TuneChoice& ch) {
  if (ch.sharding.empty() || ch.shards.empty()) return "";
  std::string out = "        sharding_types=[" + python_string(ch.sharding) + "],\n";
  if (ch.sharding == "column_wise") out += "        min_partition=" + std::to_string(ch.shards[0].size) + ",\n";
  return out;
}

// edo_placement's entry: {"type": ..., "ranks": [...]} (the devices in shard order).
std::string placement_of(const model::TuneChoice& ch) {
  std::string ranks;
  for (size_t i = 0; i < ch.shards.size(); ++i) ranks += (i ? ", " : "") + std::to_string(ch.shards[i].device);
  return "{\"type\": " + python_string(ch.sharding) + ", \"ranks\": [" + ranks + "]}";
}

}  // namespace

double distinct_in_window(const std::vector<std::pair<double, double>>& hit, double window, double rows) {
  if (!(window > 0) || !(rows > 0)) return 0;
  std::vector<std::pair<double, double>> pts{{0.0, 0.0}};
  for (const auto& p : hit)
    if (p.first > pts.back().first && std::isfinite(p.second)) pts.push_back({p.first, std::clamp(p.second, 0.0, 1.0)});
  double t = 0, x = 0;
  constexpr int kPieces = 64;  // the miss rate is integrated piecewise within each segment
  for (size_t i = 1; i < pts.size(); ++i) {
    const auto [x0, h0] = pts[i - 1];
    const auto [x1, h1] = pts[i];
    for (int k = 0; k < kPieces; ++k) {
      const double a = x0 + (x1 - x0) * k / kPieces, b = x0 + (x1 - x0) * (k + 1) / kPieces;
      const double mid = (a + b) / 2;
      const double miss = std::max(1e-9, 1.0 - (h0 + (h1 - h0) * (mid - x0) / (x1 - x0)));
      const double dt = (b - a) / miss;
      if (t + dt >= window) return std::min(rows, a + (window - t) * miss);
      t += dt;
      x = b;
    }
  }
  // Past the curve: the last miss rate goes on.
  const double last_miss = std::max(1e-9, 1.0 - pts.back().second);
  return std::min({rows, window, x + (window - t) * last_miss});
}

std::string plan_to_torchrec(const TuneResult& r) { return plan_to_torchrec(r, {}); }

namespace {

// How the file keys a table, and what the recording knows of it. The key is the config name
// the hook recorded, else the module-path rule; two collections may both hold a config "t":
// TorchRec's planner then cannot tell them apart either, so such tables keep their module paths
// as keys rather than overwrite each other.
class TorchRecNames {
 public:
  TorchRecNames(const TuneResult& r, const std::map<std::string, TorchRecFacts>& facts) : facts_(facts) {
    for (const auto& ch : r.choices) ++uses_[config_of(ch.table)];
  }
  const TorchRecFacts* facts_of(const std::string& table) const {
    auto it = facts_.find(table);
    return it == facts_.end() ? nullptr : &it->second;
  }
  std::string key_of(const std::string& path) const {
    const std::string n = config_of(path);
    auto it = uses_.find(n);
    return it != uses_.end() && it->second > 1 ? path : n;
  }

 private:
  std::string config_of(const std::string& table) const {
    const TorchRecFacts* f = facts_of(table);
    return f && !f->config.empty() ? f->config : config_name_of(table);
  }
  const std::map<std::string, TorchRecFacts>& facts_;
  std::map<std::string, int> uses_;
};

// One chosen (tuned) table as the file writes it: its key and comment, what the recording and
// the plan know of it.
struct ChoiceEntry {
  ChoiceEntry(const TuneResult& r, const TorchRecNames& names, const model::TuneChoice& choice)
      : ch(choice),
        c(r.candidates[static_cast<size_t>(choice.candidate)]),
        table(r.table_named(choice.table)),  // constant time: 200,000 tables are linear
        facts(names.facts_of(choice.table)),
        name(python_string(names.key_of(choice.table))),
        comment("    # module path: " + python_string(choice.table) + "\n"),
        sharding(sharding_of(choice)) {
    if (!table) return;
    rows = table->rows;
    dim = table->dim;
    element_bytes = table->dtype == "fp16" || table->dtype == "bf16" ? 2 : 4;
    training = table->training;
    if (!table->dtype.empty()) table_dtype = table->dtype;
    if (c.strategy == "offload" && lru_policy(c)) measured = measured_miss_of(c, cache_load_factor(c, rows));
  }
  const model::TuneChoice& ch;
  const TuneCandidate& c;
  const TuneTable* table;       // nullptr when the plan lacks it
  const TorchRecFacts* facts;   // nullptr when the recording says nothing of it
  std::string name;             // its key, a Python string literal
  std::string comment;          // its module path, escaped like every recorded text
  std::string sharding;         // sharding_of(ch)
  // An offload's measured miss rate at its load factor: put into its curve (both places).
  std::optional<std::pair<double, double>> measured;
  uint64_t rows = 0;
  uint32_t dim = 0;
  uint64_t element_bytes = 4;
  bool training = false;
  std::string table_dtype = "fp32";
};

// The choice in TorchRec's terms: its DataType member, or why it has none (the table is then
// edo_only), and what pruning and the ssd tier need besides.
struct TorchRecForm {
  std::string dt;
  std::string why_not;
  uint64_t kept = 0;                 // a pruned table's rows
  std::optional<KeyValueSizing> kv;  // an ssd choice's sizes (its constraint only when dt is set)
};

// The form of e's choice; an ssd choice's key_value_tables entry and an mch choice's
// managed_collision entry go into `s` here.
TorchRecForm form_of(const ChoiceEntry& e, TorchRecSections& s) {
  TorchRecForm f;
  const TuneCandidate& c = e.c;
  if (c.strategy == "pruned") {
    // TorchRec prunes at inference only: BaseEmbeddingConfig.num_embeddings_post_pruning is read
    // by torchrec.quant (quantize_state_dict keeps the first N rows) and the QUANT sharders'
    // table specs; the training sharders and the planner's constraints never read it.
    f.kept = kept_rows_of(c);
    if (e.training)
      f.why_not = "TorchRec prunes for inference only (num_embeddings_post_pruning is read by torchrec.quant and the "
                  "inference sharders); a training table keeps its num_embeddings rows";
    else if (f.kept == 0 || (e.rows > 0 && f.kept > e.rows))
      f.why_not = "the plan's kept_rows is not a row count between 1 and the table's rows";
    else
      f.dt = data_type_of(e.table_dtype, false, f.why_not);  // the kept rows stay in the recorded format
  } else if (c.strategy == "ssd") {
    f.kv = ssd_choice(c, e.table, f.dt, f.why_not);
    if (f.kv) s.key_value += e.comment + "    " + e.name + ": " + key_value_entry(c, *f.kv, !f.dt.empty(), e.training) + ",\n";
  } else if (c.strategy == "mch") {
    // Managed collision: N rows in the recorded format behind TorchRec's MCH module.
    f.dt = data_type_of(e.table_dtype, e.training, f.why_not);
    if (!f.dt.empty()) s.managed += e.comment + "    " + e.name + ": " + mch_module_of(c, e.rows) + ",\n";
  } else {
    f.dt = data_type_of(c.strategy, e.training, f.why_not);
  }
  if (c.strategy == "offload" && !lru_policy(c)) {
    f.dt.clear();
    f.why_not = "edo's static hot set is neither of FBGEMM's cache policies (LRU, LFU)";
  }
  return f;
}

// PQ, hashing, QR, low rank, training pruning, fp8, and formats FBGEMM has no kernel for in this
// mode: the table keeps TorchRec's default placement; the edo strategy is listed (and why) for
// whoever implements it.
void add_edo_only(const ChoiceEntry& e, const TorchRecForm& f, TorchRecSections& s) {
  // An ssd choice's spec is its row format only: the tier is named too.
  const std::string spec = e.c.strategy == "ssd" && e.c.spec != "ssd" && !e.c.spec.empty() ? "ssd (" + e.c.spec + " rows)" : e.c.spec;
  s.edo_only += e.comment + "    " + e.name + ": " + python_string(spec) + ",\n";
  s.why_edo_only += "    " + e.name + ": " + python_string(f.why_not) + ",\n";
  // Its workload still helps the planner place it (no kernel or data type constrained).
  if (const std::string w = workload_of(e.facts) + e.sharding; !w.empty())
    s.constraints += e.comment + "    " + e.name + ": ParameterConstraints(\n" + w + "    ),\n";
}

// A table TorchRec has a kernel for: its data type, its ParameterConstraints, and where it
// counts for the sharders' fused_params and FBGEMM's offload bytes.
void add_constraint(const ChoiceEntry& e, const TorchRecForm& f, TorchRecSections& s) {
  // FBGEMM's SSD TBE trains with EXACT_ROWWISE_ADAGRAD, PARTIAL_ROWWISE_ADAM or ADAM only
  // (fbgemm_gpu 1.9.0 tbe/ssd/training.py line 353-357) and keeps the state on the device for
  // every row: a KEY_VALUE table trains with row-wise Adagrad (ssd_candidates.h), which the
  // sharder's fused_params must name, whatever the plan's candidate recorded.
  if (e.training && (e.c.optimizer == "rowwise_adagrad" || f.kv)) {
    s.rowwise_adagrad = true;
    s.rowwise_tables += "    " + e.name + ",\n";
    ++s.rowwise_count;
  }
  if (e.training) {
    s.fused_tables += "    " + e.name + ",\n";
    ++s.fused_count;
  }
  s.data_types += e.comment + "    " + e.name + ": DataType." + f.dt + ",\n";
  if (f.kept > 0) s.post_pruning += e.comment + "    " + e.name + ": " + std::to_string(f.kept) + ",\n";
  std::string kernel = e.training ? "FUSED" : "QUANT";
  std::string extra = workload_of(e.facts) + e.sharding;
  if (f.kv) {
    kernel = "KEY_VALUE";
    extra += key_value_constraint(*f.kv);
  }
  if (e.c.strategy == "offload") {
    kernel += "_UVM_CACHING";
    const double lf = cache_load_factor(e.c, e.rows);
    const std::string algorithm = cache_algorithm_of(e.c);
    extra += "        cache_params=CacheParams(algorithm=CacheAlgorithm." + algorithm + ", load_factor=" + python_number(lf) +
             stats_of(e.facts, e.measured) + "),\n";
    // FBGEMM's device bytes under that algorithm (cache_policies.h, cited there).
    const uint64_t fb = fbgemm_cache_device_bytes(e.rows, e.dim, static_cast<uint32_t>(e.element_bytes), lf, algorithm == "LFU", false);
    s.fbgemm_bytes += e.comment + "    " + e.name + ": " + std::to_string(fb) + ",\n";
    s.fbgemm_total += fb - std::min(fb, e.ch.device_bytes);
  }
  // FP16 training weights lose small updates to round-to-nearest: FBGEMM's stochastic rounding.
  if (e.training && f.dt == "FP16") extra += "        stochastic_rounding=True,\n";
  s.constraints += e.comment + "    " + e.name + ": ParameterConstraints(\n        compute_kernels=[EmbeddingComputeKernel." + kernel +
                   ".value],\n" + extra + "    ),\n";
}

// One choice of the plan into the file's sections (nothing for a table that was not tuned).
void add_choice(const TuneResult& r, const TorchRecNames& names, const model::TuneChoice& ch, TorchRecSections& s) {
  if (ch.candidate < 0 || static_cast<size_t>(ch.candidate) >= r.candidates.size()) return;  // not tuned
  const ChoiceEntry e(r, names, ch);
  s.paths += "    " + e.name + ": " + python_string(ch.table) + ",\n";
  if (const std::string st = statistics_of(e.facts, e.measured); !st.empty())
    s.cache_statistics += "    " + e.name + ": " + st + ",\n";
  if (!ch.shares_with.empty()) {
    s.shared += e.comment + "    " + e.name + ": " + python_string(names.key_of(ch.shares_with)) + ",\n";
    return;
  }
  if (!e.sharding.empty()) s.placement += "    " + e.name + ": " + placement_of(ch) + ",\n";
  const TorchRecForm f = form_of(e, s);
  if (f.dt.empty()) add_edo_only(e, f, s);
  else add_constraint(e, f, s);
}

}  // namespace

std::string plan_to_torchrec(const TuneResult& r, const std::map<std::string, TorchRecFacts>& facts) {
  const TorchRecNames names(r, facts);
  TorchRecSections s;
  for (const auto& ch : r.choices) add_choice(r, names, ch, s);
  return torchrec_file_text(r, s);
}

}  // namespace edo::tuner
