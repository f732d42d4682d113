// The fixed text of the TorchRec export (plan_torchrec_text.h): nothing recorded appears in it
// but through python_string().
#include "plan_torchrec_text.h"

#include "edo/model/tune_reasons.h"
#include "edo/tuner/plan_io.h"

namespace edo::tuner {
namespace {

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

// The file's first part: how to use it, its imports and the EdoCacheStatistics class.
std::string torchrec_file_head() {
  std::string out;
  out += "# edo plan for TorchRec's sharding planner, written by " +
         model::command_words().say({.code = model::Reason::kWrittenByExport, .name = "torchrec"}) + "\n";
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
  return out;
}

}  // namespace

std::string torchrec_file_text(const model::TuneResult& r, const TorchRecSections& s) {
  std::string out = torchrec_file_head();
  out += "EDO_PLAN = {\n";
  out += "    \"schema\": " + python_string(kPlanSchema) + ",\n";
  out += "    \"backend\": " + python_string(r.backend) + ",\n";
  out += "    \"device\": " + python_string(r.device) + ",\n";
  out += "    \"weights\": " + python_string(r.weights) + ",\n";
  out += "    \"budget_bytes\": " + std::to_string(r.budget_bytes) + ",\n";
  out += "    \"plan_device_bytes\": " + std::to_string(r.plan_device_bytes) + ",\n";
  out += "    \"feasible\": " + std::string(r.feasible ? "True" : "False") + ",\n";
  out += "    \"devices\": " + std::to_string(r.devices) + ",\n";
  out += "    \"fbgemm_plan_device_bytes\": " + std::to_string(r.plan_device_bytes + s.fbgemm_total) + ",\n";
  out += "}\n\n";
  out += "constraints = {\n" + s.constraints + "}\n\n";
  out += "data_types = {\n" + s.data_types + "}\n\n";
  out += "edo_only = {\n" + s.edo_only + "}\n\n";
  out += "edo_only_why = {\n" + s.why_edo_only + "}\n\n";
  out += "num_embeddings_post_pruning = {\n" + s.post_pruning + "}\n\n";
  out += "shared_with = {\n" + s.shared + "}\n\n";
  out += "# managed_collision: tables behind TorchRec's managed-collision module (edo strategy \"mch\"), e.g.\n";
  out += "#   m = managed_collision[n]\n";
  out += "#   EmbeddingBagConfig(name=n, num_embeddings=m[\"zch_size\"], ...)\n";
  out += "#   MCHManagedCollisionModule(zch_size=m[\"zch_size\"], device=device, input_hash_size=m[\"input_hash_size\"],\n";
  out += "#       eviction_policy=DistanceLFU_EvictionPolicy(decay_exponent=m[\"decay_exponent\"]),\n";
  out += "#       eviction_interval=m[\"eviction_interval\"])  (torchrec.modules.mc_modules)\n";
  out += "#   in a ManagedCollisionCollection. The model must be trained with it. \"predicted\": edo's replay of the\n";
  out += "#   recorded ids through that module, held out (the last 30% of the lookups).\n";
  out += "managed_collision = {\n" + s.managed + "}\n\n";
  out += kKeyValueTablesComment;
  out += "key_value_tables = {\n" + s.key_value + "}\n\n";
  out += "module_paths = {\n" + s.paths + "}\n\n";
  out += "# FBGEMM's device bytes for each offloaded table (its 32-way cache, cache_index_table_map and LRU\n";
  out += "# or LFU state; plans since edo counts these): EDO_PLAN's fbgemm_plan_device_bytes is the plan with them.\n";
  out += "fbgemm_offload_device_bytes = {\n" + s.fbgemm_bytes + "}\n\n";
  out += "# Every recorded table's CacheStatistics (for a table you cache yourself: CacheParams(stats=...)).\n";
  out += "cache_statistics = {\n" + s.cache_statistics + "}\n\n";
  out += "# A plan over several devices (EDO_PLAN's devices; budget_bytes is per device): where edo placed each\n";
  out += "# table (its shards' devices in order). TorchRec's ParameterConstraints has no field for ranks: its planner\n";
  out += "# places the sharding type given in constraints itself; this is edo's balance of bytes and lookups.\n";
  out += "edo_placement = {\n" + s.placement + "}\n\n";
  out += std::string("fused_params = {") + (s.rowwise_adagrad ? "\"optimizer\": EmbOptimType.EXACT_ROWWISE_ADAGRAD" : "") + "}\n";
  // The whole change (issue 29 point 5): a sharder's fused_params reach every table it shards, so
  // the tables the plan did not move to row-wise Adagrad are named too.
  out += "\n# The plan moves these " + std::to_string(s.rowwise_count) + " table(s) to row-wise Adagrad (sparse gradient):\n";
  out += "rowwise_adagrad_tables = [\n" + s.rowwise_tables + "]\n";
  out += "# fused_params reaches every training table its sharder shards: these " + std::to_string(s.fused_count) +
         " with FUSED or KEY_VALUE kernels.\n";
  if (s.rowwise_adagrad && s.fused_count > s.rowwise_count)
    out += "# " + std::to_string(s.fused_count - s.rowwise_count) +
           " of them are not in rowwise_adagrad_tables: the plan's bytes for those assume the job's own optimizer, so\n"
           "# shard them with a second sharder (fused_params={}) or accept row-wise Adagrad for them too.\n";
  out += "fused_params_reaches = [\n" + s.fused_tables + "]\n";
  return out;
}

}  // namespace edo::tuner
