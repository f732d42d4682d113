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
#include "torchrec_key_value.h"

namespace edo::tuner {

using model::TuneCandidate;
using model::TuneResult;

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

// The rows a pruned table keeps (params "kept_rows"), 0 when absent or not a positive integer.
uint64_t kept_rows_of(const TuneCandidate& c) {
  const auto p = nlohmann::json::parse(c.params_json.empty() ? "{}" : c.params_json, nullptr, false);
  if (p.is_object() && p.contains("kept_rows") && p["kept_rows"].is_number_unsigned()) return p["kept_rows"].get<uint64_t>();
  return 0;
}

// A managed-collision choice (mch_candidates.h) as the arguments of TorchRec's
// MCHManagedCollisionModule (torchrec 1.9.2 torchrec/modules/mc_modules.py line 1089: zch_size,
// eviction_policy, eviction_interval, input_hash_size) and the rates edo predicts for it.
std::string mch_module_of(const TuneCandidate& c, uint64_t rows) {
  const auto p = nlohmann::json::parse(c.params_json.empty() ? "{}" : c.params_json, nullptr, false);
  auto num = [&](const char* k, double d) { return p.is_object() && p.contains(k) && p[k].is_number() ? p[k].get<double>() : d; };
  const std::string policy = p.is_object() && p.contains("policy") && p["policy"].is_string() ? p["policy"].get<std::string>() : "distance_lfu";
  const char* cls = policy == "lfu" ? "LFU_EvictionPolicy" : policy == "lru" ? "LRU_EvictionPolicy" : "DistanceLFU_EvictionPolicy";
  std::string s = "{\"zch_size\": " + std::to_string(static_cast<uint64_t>(num("slots", 0))) +
                  ", \"eviction_policy\": \"" + cls + "\", \"decay_exponent\": " + python_number(num("decay_exponent", 1.0)) +
                  ", \"eviction_interval\": " + std::to_string(static_cast<uint64_t>(num("eviction_interval", 1))) +
                  ", \"input_hash_size\": " + std::to_string(rows) + ", \"predicted\": {";
  const char* keys[] = {"hit_rate", "insert_rate", "collision_rate", "eviction_rate", "own_row_rate"};
  for (size_t i = 0; i < 5; ++i) s += std::string(i ? ", " : "") + "\"" + keys[i] + "\": " + python_number(num(keys[i], 0.0));
  return s + "}}";
}

double cache_load_factor(const TuneCandidate& c, uint64_t rows) {
  const auto p = nlohmann::json::parse(c.params_json.empty() ? "{}" : c.params_json, nullptr, false);
  if (p.is_object() && p.contains("cache_rows") && p["cache_rows"].is_number() && rows > 0)
    return p["cache_rows"].get<double>() / static_cast<double>(rows);
  if (p.is_object() && p.contains("cache") && p["cache"].is_number()) return p["cache"].get<double>();
  return 0.0;
}

bool lru_policy(const TuneCandidate& c) {
  const auto p = nlohmann::json::parse(c.params_json.empty() ? "{}" : c.params_json, nullptr, false);
  return !(p.is_object() && p.contains("policy") && p["policy"] == "static");
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
  const auto p = nlohmann::json::parse(c.params_json.empty() ? "{}" : c.params_json, nullptr, false);
  if (p.is_object() && p.contains("cache_policy") && p["cache_policy"] == "lfu") return "LFU";
  return "LRU";
}

// The miss rate the plan measured for an offload at its cache (held out when it was), for
// EdoCacheStatistics at the exported load factor.
std::optional<std::pair<double, double>> measured_miss_of(const TuneCandidate& c, double load_factor) {
  const std::optional<double> hit = c.heldout_hit_rate ? c.heldout_hit_rate : c.hit_rate;
  if (!hit || !std::isfinite(*hit) || !(load_factor > 0)) return std::nullopt;
  return std::make_pair(load_factor, 1.0 - *hit);
}

// TorchRec's CacheStatistics (torchrec/distributed/types.py, torchrec 1.9.2, line 617): three
// members read by the planner's offload proposer and shard estimators, and stable_fingerprint(),
// which the planner calls for its persistent cache key (_CacheParamsFingerprintMemo,
// torchrec/distributed/planner/types.py line 1586; the base class raises). TorchRec's estimator
// multiplies expected_miss_rate(clf) by expected_lookups for the rows fetched a step
// (estimator/estimator.py line 844; expected_miss_rate from the stats at estimator/types.py line
// 730). EmbeddingOffloadStats (planner/shard_estimators.py line 965) is TorchRec's own form: a
// histogram of LRU hits over n equal bins of the table's height, its miss rate rescaled to 0 at
// the whole table. Fixed text: no string but the docstring.
constexpr const char* kCacheStatisticsClass = R"(
class EdoCacheStatistics(CacheStatistics):
    """TorchRec's CacheStatistics from edo's recording.

    expected_miss_rate(clf): the share of ALL lookups that miss an LRU cache of clf * height
    rows, first reads of a row (compulsory misses) included. heldout=True: measured on the
    held-out 30 % of the recorded stream with the cache warm from the first 70 %, the rate edo's
    plan scores offloads by (at the exported load_factor it is the plan's figure); heldout=False:
    over the whole recording. The curve is (load factor, miss rate) points, linear between them,
    1 at load factor 0; past the last point the last rate stays (compulsory misses do not shrink
    with the cache); at clf >= 1 it is 0 (TorchRec then keeps the table in HBM: no cache).
    TorchRec's own convention (EmbeddingOffloadStats) leaves compulsory misses out and is 0 at 1.

    expected_lookups: the lookups a step (every id read). TorchRec's estimators multiply it by
    expected_miss_rate: with a miss rate over all lookups the product is the rows fetched a step,
    edo's count. distinct_lookups: the distinct rows a step (Che's approximation), the meaning
    TorchRec's docstring gives expected_lookups.

    cacheability: the area under the miss curve (0: very cacheable, 1: not at all).
    mrc_hist_counts(n) and embedding_offload_stats(n): TorchRec's EmbeddingOffloadStats form, n
    bins of height / n rows (default min(height, 4096)), the lookups a step each bin's rows hit;
    its miss rate is the reuse-only rate (m - m_floor) / (1 - m_floor) at the bin's upper edge.
    """

    def __init__(self, expected_lookups, miss_curve, cacheability, height=0, heldout=False, distinct_lookups=0.0):
        self._expected_lookups = expected_lookups
        self._miss_curve = tuple((float(x), float(y)) for x, y in miss_curve)
        self._cacheability = cacheability
        self.height = int(height)
        self.heldout = bool(heldout)
        self.distinct_lookups = distinct_lookups

    @property
    def expected_lookups(self):
        return self._expected_lookups

    def _miss(self, clf):
        x0, y0 = 0.0, 1.0
        for x1, y1 in self._miss_curve:
            if clf <= x1:
                return y0 + (y1 - y0) * (clf - x0) / (x1 - x0) if x1 > x0 else y1
            x0, y0 = x1, y1
        return y0

    def expected_miss_rate(self, clf):
        if clf <= 0:
            return 1.0
        if clf >= 1:
            return 0.0
        return self._miss(clf)

    @property
    def cacheability(self):
        return self._cacheability

    def stable_fingerprint(self):
        return (type(self).__qualname__, 1, float(self._expected_lookups), self._miss_curve, float(self._cacheability),
                self.height, self.heldout, float(self.distinct_lookups))

    def mrc_hist_counts(self, bins=0):
        n = int(bins) if bins else max(1, min(self.height, 4096))
        hit = [1.0 - self._miss(j / n) for j in range(n + 1)]
        return [max(0.0, hit[j + 1] - hit[j]) * self._expected_lookups for j in range(n)]

    def embedding_offload_stats(self, bins=0):
        import torch
        from torchrec.distributed.planner.shard_estimators import EmbeddingOffloadStats
        hist = torch.tensor(self.mrc_hist_counts(bins), dtype=torch.float64)
        return EmbeddingOffloadStats(self._cacheability, self._expected_lookups, hist, self.height)

)";

// What the file says above key_value_tables (fixed text).
constexpr const char* kKeyValueTablesComment =
    R"(# key_value_tables: tables on the SSD tier (edo strategy "ssd"): TorchRec's KEY_VALUE kernel (FBGEMM's SSD TBE)
#   with the device cache (L1) and host cache (L2) edo replayed the recorded stream through, rounded up so the
#   replayed hit rates are kept: max_l1_cache_size to whole MB (l1_rows: the rows TorchRec's SSD TBE then caches,
#   whole 32-row sets, at most 0.2 of the table), l2_cache_size to whole GB (an item: the row, its 8-byte id,
#   CacheLib's 32-byte header). KEY_VALUE needs a "cuda" topology with SSD capacity (the sharders offer it for
#   cuda only) and is never chosen unless named in constraints. The sizes are per TBE: TorchRec puts tables with
#   equal fused params (these KeyValueParams included) in one TBE. TorchRec's planner counts the L1 in HBM, the
#   table on SSD and the L2 nowhere, and prices the lookups at Topology(ssd_mem_bw=...) (100 MiB/s unless given).
#   "replayed": edo's replay of the recorded stream through both levels. in_constraints False: an inference
#   table (TorchRec's quant sharders have no key-value kernel; see edo_only_why). A trained table: "optimizer"
#   EXACT_ROWWISE_ADAGRAD (FBGEMM's SSD TBE trains with it, PARTIAL_ROWWISE_ADAM or ADAM only, and keeps the
#   state on the device for every row: edo's plan counts row-wise Adagrad's one float per row), so it is in
#   rowwise_adagrad_tables and fused_params names it; "optimizer_why" when the job trained with another.
)";

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
  auto kv = key_value_sizing(c.params_json, t->rows, t->dim, dt == "FP16" ? 2 : 4, why_not);
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
  const auto p = nlohmann::json::parse(c.params_json.empty() ? "{}" : c.params_json, nullptr, false);
  std::string s = "{\"device_cache_rows\": " + std::to_string(kv.device_cache_rows) +
                  ", \"host_cache_rows\": " + std::to_string(kv.host_cache_rows) +
                  ", \"l1_rows\": " + std::to_string(kv.l1_sets * kFbgemmWays) +
                  ", \"max_l1_cache_size_mb\": " + std::to_string(kv.max_l1_cache_mb) +
                  ", \"l2_cache_size_gb\": " + std::to_string(kv.l2_cache_gb) +
                  ", \"in_constraints\": " + (in_constraints ? "True" : "False");
  if (training) {
    s += ", \"optimizer\": \"EXACT_ROWWISE_ADAGRAD\"";
    if (p.is_object() && p.contains("optimizer_why") && p["optimizer_why"].is_string())
      s += ", \"optimizer_why\": " + python_string(p["optimizer_why"].get<std::string>());
  }
  s += ", \"replayed\": {";
  const char* keys[] = {"device_hit_rate", "host_hit_rate", "ssd_reads_per_step", "writebacks_per_step", "ssd_writes_per_step"};
  bool first = true;
  for (const char* k : keys)
    if (p.is_object() && p.contains(k) && p[k].is_number()) {
      s += std::string(first ? "" : ", ") + "\"" + k + "\": " + python_number(p[k].get<double>());
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

std::string plan_to_torchrec(const TuneResult& r, const std::map<std::string, TorchRecFacts>& facts) {
  std::string constraints, data_types, edo_only, shared, paths, why_edo_only, fbgemm_bytes, cache_statistics, post_pruning, managed,
      placement, key_value;
  uint64_t fbgemm_total = 0;  // the plan's device bytes with FBGEMM's offload layout
  bool rowwise_adagrad = false;
  // Every training table given TorchRec's fused kernel (the sharder's fused_params reach them
  // all), and the ones the plan moved to row-wise Adagrad.
  std::string fused_tables, rowwise_tables;
  size_t fused_count = 0, rowwise_count = 0;
  // Two collections may both hold a config "t": TorchRec's planner then cannot tell them apart
  // either; such tables keep their module paths as keys rather than overwrite each other.
  // The config name the hook recorded, else the module-path rule.
  auto facts_of = [&](const std::string& table) -> const TorchRecFacts* {
    auto it = facts.find(table);
    return it == facts.end() ? nullptr : &it->second;
  };
  auto config_of = [&](const std::string& table) {
    const TorchRecFacts* f = facts_of(table);
    return f && !f->config.empty() ? f->config : config_name_of(table);
  };
  std::map<std::string, int> uses;
  for (const auto& ch : r.choices) ++uses[config_of(ch.table)];
  auto key_of = [&](const std::string& path) {
    const std::string n = config_of(path);
    return uses[n] > 1 ? path : n;
  };
  for (const auto& ch : r.choices) {
    if (ch.candidate < 0 || static_cast<size_t>(ch.candidate) >= r.candidates.size()) continue;  // not tuned
    const TuneCandidate& c = r.candidates[static_cast<size_t>(ch.candidate)];
    const std::string name = python_string(key_of(ch.table));
    // The module path, escaped like every recorded text (no newline can end the comment).
    const std::string comment = "    # module path: " + python_string(ch.table) + "\n";
    paths += "    " + name + ": " + python_string(ch.table) + ",\n";
    // An offload's measured miss rate at its load factor goes into its curve (both places).
    std::optional<std::pair<double, double>> measured;
    if (c.strategy == "offload" && lru_policy(c))
      if (const TuneTable* t = r.table_named(ch.table)) measured = measured_miss_of(c, cache_load_factor(c, t->rows));
    if (const std::string st = statistics_of(facts_of(ch.table), measured); !st.empty())
      cache_statistics += "    " + name + ": " + st + ",\n";
    if (!ch.shares_with.empty()) {
      shared += comment + "    " + name + ": " + python_string(key_of(ch.shares_with)) + ",\n";
      continue;
    }
    const std::string sharding = sharding_of(ch);
    if (!sharding.empty()) placement += "    " + name + ": " + placement_of(ch) + ",\n";
    uint64_t rows = 0;
    uint32_t dim = 0;
    uint64_t element_bytes = 4;
    bool training = false;
    std::string table_dtype = "fp32";
    if (const TuneTable* t = r.table_named(ch.table)) {  // constant time: 200,000 tables are linear
      rows = t->rows;
      dim = t->dim;
      element_bytes = t->dtype == "fp16" || t->dtype == "bf16" ? 2 : 4;
      training = t->training;
      if (!t->dtype.empty()) table_dtype = t->dtype;
    }
    std::string why_not;
    std::string dt;
    uint64_t kept = 0;
    std::optional<KeyValueSizing> kv;  // an ssd choice's sizes (its constraint only when dt is set)
    if (c.strategy == "pruned") {
      // TorchRec prunes at inference only: BaseEmbeddingConfig.num_embeddings_post_pruning is read
      // by torchrec.quant (quantize_state_dict keeps the first N rows) and the QUANT sharders'
      // table specs; the training sharders and the planner's constraints never read it.
      kept = kept_rows_of(c);
      if (training)
        why_not = "TorchRec prunes for inference only (num_embeddings_post_pruning is read by torchrec.quant and the "
                  "inference sharders); a training table keeps its num_embeddings rows";
      else if (kept == 0 || (rows > 0 && kept > rows))
        why_not = "the plan's kept_rows is not a row count between 1 and the table's rows";
      else
        dt = data_type_of(table_dtype, false, why_not);  // the kept rows stay in the recorded format
    } else if (c.strategy == "ssd") {
      kv = ssd_choice(c, r.table_named(ch.table), dt, why_not);
      if (kv) key_value += comment + "    " + name + ": " + key_value_entry(c, *kv, !dt.empty(), training) + ",\n";
    } else if (c.strategy == "mch") {
      // Managed collision: N rows in the recorded format behind TorchRec's MCH module.
      dt = data_type_of(table_dtype, training, why_not);
      if (!dt.empty()) managed += comment + "    " + name + ": " + mch_module_of(c, rows) + ",\n";
    } else {
      dt = data_type_of(c.strategy, training, why_not);
    }
    if (c.strategy == "offload" && !lru_policy(c)) {
      dt.clear();
      why_not = "edo's static hot set is neither of FBGEMM's cache policies (LRU, LFU)";
    }
    if (dt.empty()) {
      // PQ, hashing, QR, low rank, training pruning, fp8, and formats FBGEMM has no kernel for in this
      // mode: the table keeps TorchRec's default placement; the edo strategy is listed (and why)
      // for whoever implements it.
      // An ssd choice's spec is its row format only: the tier is named too.
      const std::string spec = c.strategy == "ssd" && c.spec != "ssd" && !c.spec.empty() ? "ssd (" + c.spec + " rows)" : c.spec;
      edo_only += comment + "    " + name + ": " + python_string(spec) + ",\n";
      why_edo_only += "    " + name + ": " + python_string(why_not) + ",\n";
      // Its workload still helps the planner place it (no kernel or data type constrained).
      if (const std::string w = workload_of(facts_of(ch.table)) + sharding; !w.empty())
        constraints += comment + "    " + name + ": ParameterConstraints(\n" + w + "    ),\n";
      continue;
    }
    // FBGEMM's SSD TBE trains with EXACT_ROWWISE_ADAGRAD, PARTIAL_ROWWISE_ADAM or ADAM only
    // (fbgemm_gpu 1.9.0 tbe/ssd/training.py line 353-357) and keeps the state on the device for
    // every row: a KEY_VALUE table trains with row-wise Adagrad (ssd_candidates.h), which the
    // sharder's fused_params must name, whatever the plan's candidate recorded.
    if (training && (c.optimizer == "rowwise_adagrad" || kv)) {
      rowwise_adagrad = true;
      rowwise_tables += "    " + name + ",\n";
      ++rowwise_count;
    }
    if (training) {
      fused_tables += "    " + name + ",\n";
      ++fused_count;
    }
    data_types += comment + "    " + name + ": DataType." + dt + ",\n";
    if (kept > 0) post_pruning += comment + "    " + name + ": " + std::to_string(kept) + ",\n";
    std::string kernel = training ? "FUSED" : "QUANT";
    const TorchRecFacts* f = facts_of(ch.table);
    std::string extra = workload_of(f) + sharding;
    if (kv) {
      kernel = "KEY_VALUE";
      extra += key_value_constraint(*kv);
    }
    if (c.strategy == "offload") {
      kernel += "_UVM_CACHING";
      const double lf = cache_load_factor(c, rows);
      extra += "        cache_params=CacheParams(algorithm=CacheAlgorithm." + cache_algorithm_of(c) + ", load_factor=" + python_number(lf) +
               stats_of(f, measured) + "),\n";
      // FBGEMM's device bytes under that algorithm (cache_policies.h, cited there).
      const uint64_t fb =
          fbgemm_cache_device_bytes(rows, dim, static_cast<uint32_t>(element_bytes), lf, cache_algorithm_of(c) == "LFU", false);
      fbgemm_bytes += comment + "    " + name + ": " + std::to_string(fb) + ",\n";
      fbgemm_total += fb - std::min(fb, ch.device_bytes);
    }
    // FP16 training weights lose small updates to round-to-nearest: FBGEMM's stochastic rounding.
    if (training && dt == "FP16") extra += "        stochastic_rounding=True,\n";
    constraints += comment + "    " + name + ": ParameterConstraints(\n        compute_kernels=[EmbeddingComputeKernel." + kernel +
                   ".value],\n" + extra + "    ),\n";
  }
  std::string out;
  out += "# edo plan for TorchRec's sharding planner, written by `edo export --format torchrec`\n";
  out += "# (schema edo.plan/1). Recorded text (table names, the device) appears only in string\n";
  out += "# literals. Use:\n";
  out += "#   from this_file import constraints, data_types\n";
  out += "#   EmbeddingBagConfig(name=n, ..., data_type=data_types.get(n, DataType.FP32))\n";
  out += "#   EmbeddingShardingPlanner(topology=..., constraints=constraints)\n";
  out += "# edo_only: tables whose chosen strategy TorchRec has no kernel for (edo strategy spec).\n";
  out += "# shared_with: tables tied to another table's weights (one EmbeddingBagConfig, two features).\n";
  out += "# Tables are keyed by their TorchRec config name (EmbeddingBagConfig.name: the last part of the\n";
  out += "# module path after .embedding_bags. / .embeddings., or the name edo's PyTorch hook recorded from the\n";
  out += "# collection's configs); module_paths maps it back to the recording. feature_names, pooling_factors,\n";
  out += "# num_poolings, batch_sizes (per feature) and CacheParams.stats (EdoCacheStatistics) are what the recording measured.\n";
  out += "# EdoCacheStatistics counts EVERY miss, first reads (compulsory misses) included, over all lookups (held out when\n";
  out += "# heldout=True: the plan's own miss rate at its load factor); expected_lookups is the lookups a step, so TorchRec's\n";
  out += "# expected_miss_rate x expected_lookups is the rows fetched a step. TorchRec's EmbeddingOffloadStats convention\n";
  out += "# (compulsory misses left out): .embedding_offload_stats().\n";
  out += "# sharding_types (and min_partition for column-wise) in constraints: edo's placement over EDO_PLAN's devices.\n";
  out += "# fused_params: for the sharders (EmbeddingBagCollectionSharder(fused_params=fused_params)); the\n";
  out += "# plan's bytes assume row-wise Adagrad when it names EmbOptimType.EXACT_ROWWISE_ADAGRAD.\n";
  out += "# num_embeddings_post_pruning: inference tables pruned to the rows the recording read, for\n";
  out += "#   EmbeddingBagConfig(name=n, ..., num_embeddings_post_pruning=num_embeddings_post_pruning.get(n)), or before\n";
  out += "#   torchrec.quant's from_float: setattr(ebc, \"__emb_name_to_num_rows_post_pruning\", num_embeddings_post_pruning).\n";
  out += "#   TorchRec keeps a table's FIRST N rows: move the kept rows to the front and remap the ids first.\n";
  out += "from fbgemm_gpu.split_embedding_configs import EmbOptimType\n";
  out += "from fbgemm_gpu.split_table_batched_embeddings_ops_common import CacheAlgorithm\n";
  out += "from torchrec.distributed.embedding_types import EmbeddingComputeKernel\n";
  out += "from torchrec.distributed.planner.types import ParameterConstraints\n";
  out += "from torchrec.distributed.types import CacheParams, CacheStatistics, KeyValueParams\n";
  out += "from torchrec.modules.embedding_configs import DataType\n";
  out += kCacheStatisticsClass;
  out += "EDO_PLAN = {\n";
  out += "    \"schema\": " + python_string(kPlanSchema) + ",\n";
  out += "    \"backend\": " + python_string(r.backend) + ",\n";
  out += "    \"device\": " + python_string(r.device) + ",\n";
  out += "    \"weights\": " + python_string(r.weights) + ",\n";
  out += "    \"budget_bytes\": " + std::to_string(r.budget_bytes) + ",\n";
  out += "    \"plan_device_bytes\": " + std::to_string(r.plan_device_bytes) + ",\n";
  out += "    \"feasible\": " + std::string(r.feasible ? "True" : "False") + ",\n";
  out += "    \"devices\": " + std::to_string(r.devices) + ",\n";
  out += "    \"fbgemm_plan_device_bytes\": " + std::to_string(r.plan_device_bytes + fbgemm_total) + ",\n";
  out += "}\n\n";
  out += "constraints = {\n" + constraints + "}\n\n";
  out += "data_types = {\n" + data_types + "}\n\n";
  out += "edo_only = {\n" + edo_only + "}\n\n";
  out += "edo_only_why = {\n" + why_edo_only + "}\n\n";
  out += "num_embeddings_post_pruning = {\n" + post_pruning + "}\n\n";
  out += "shared_with = {\n" + shared + "}\n\n";
  out += "# managed_collision: tables behind TorchRec's managed-collision module (edo strategy \"mch\"), e.g.\n";
  out += "#   m = managed_collision[n]\n";
  out += "#   EmbeddingBagConfig(name=n, num_embeddings=m[\"zch_size\"], ...)\n";
  out += "#   MCHManagedCollisionModule(zch_size=m[\"zch_size\"], device=device, input_hash_size=m[\"input_hash_size\"],\n";
  out += "#       eviction_policy=DistanceLFU_EvictionPolicy(decay_exponent=m[\"decay_exponent\"]),\n";
  out += "#       eviction_interval=m[\"eviction_interval\"])  (torchrec.modules.mc_modules)\n";
  out += "#   in a ManagedCollisionCollection. The model must be trained with it. \"predicted\": edo's replay of the\n";
  out += "#   recorded ids through that module, held out (the last 30% of the lookups).\n";
  out += "managed_collision = {\n" + managed + "}\n\n";
  out += kKeyValueTablesComment;
  out += "key_value_tables = {\n" + key_value + "}\n\n";
  out += "module_paths = {\n" + paths + "}\n\n";
  out += "# FBGEMM's device bytes for each offloaded table (its 32-way cache, cache_index_table_map and LRU\n";
  out += "# or LFU state; plans since edo counts these): EDO_PLAN's fbgemm_plan_device_bytes is the plan with them.\n";
  out += "fbgemm_offload_device_bytes = {\n" + fbgemm_bytes + "}\n\n";
  out += "# Every recorded table's CacheStatistics (for a table you cache yourself: CacheParams(stats=...)).\n";
  out += "cache_statistics = {\n" + cache_statistics + "}\n\n";
  out += "# A plan over several devices (EDO_PLAN's devices; budget_bytes is per device): where edo placed each\n";
  out += "# table (its shards' devices in order). TorchRec's ParameterConstraints has no field for ranks: its planner\n";
  out += "# places the sharding type given in constraints itself; this is edo's balance of bytes and lookups.\n";
  out += "edo_placement = {\n" + placement + "}\n\n";
  out += std::string("fused_params = {") + (rowwise_adagrad ? "\"optimizer\": EmbOptimType.EXACT_ROWWISE_ADAGRAD" : "") + "}\n";
  // The whole change (issue 29 point 5): a sharder's fused_params reach every table it shards, so
  // the tables the plan did not move to row-wise Adagrad are named too.
  out += "\n# The plan moves these " + std::to_string(rowwise_count) + " table(s) to row-wise Adagrad (sparse gradient):\n";
  out += "rowwise_adagrad_tables = [\n" + rowwise_tables + "]\n";
  out += "# fused_params reaches every training table its sharder shards: these " + std::to_string(fused_count) +
         " with FUSED or KEY_VALUE kernels.\n";
  if (rowwise_adagrad && fused_count > rowwise_count)
    out += "# " + std::to_string(fused_count - rowwise_count) +
           " of them are not in rowwise_adagrad_tables: the plan's bytes for those assume the job's own optimizer, so\n"
           "# shard them with a second sharder (fused_params={}) or accept row-wise Adagrad for them too.\n";
  out += "fused_params_reaches = [\n" + fused_tables + "]\n";
  return out;
}

}  // namespace edo::tuner
