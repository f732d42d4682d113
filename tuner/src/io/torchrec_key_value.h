// TorchRec's key-value (SSD) kernel for a table edo's plan keeps on the ssd tier (strategy
// "ssd": the table on SSD behind FBGEMM's two cache levels, device rows (L1) and host rows (L2),
// sized by replaying the recorded stream through both: params device_cache_rows,
// host_cache_rows). What TorchRec 1.9.2 and FBGEMM do with the parameters this writes:
//
//  * EmbeddingComputeKernel.KEY_VALUE ("key_value": SSD as the backing store of a fully
//    materialised table) is offered by the training sharders for compute device "cuda" only
//    (BaseEmbeddingSharder.compute_kernels, torchrec/distributed/embedding_types.py line 570-589)
//    and only when a device of the topology has SSD capacity (EmbeddingEnumerator
//    ._filter_compute_kernels, planner/enumerators.py line 505-511). The inference sharders have
//    no key-value kernel (BaseQuantEmbeddingSharder.compute_kernels, embedding_types.py line
//    675-686: quant, quant_uvm, quant_uvm_caching).
//  * The L1 is FBGEMM's 32-way set-associative device cache of cache_sets sets:
//    max(int(0.2 x rows / 32), 1), capped at int(max_l1_cache_size MB / 32 / element bytes / dim)
//    (_populate_ssd_tbe_params, torchrec/distributed/batched_embedding_kernel.py line 343-407).
//    The 0.2 is fixed: a table's CacheParams.load_factor is carried into a TBE for
//    fused_uvm_caching tables only (_get_weighted_avg_cache_load_factor, torchrec/distributed/
//    embedding_sharding.py line 443-468) and the sharder's cache_load_factor is left out of the
//    TBE's params (_get_grouping_fused_params, line 484-485). So max_l1_cache_size sizes the L1,
//    and an L1 of more than a fifth of the rows cannot be had.
//  * The L2 is a CacheLib LRU of l2_cache_size GB in host memory (EmbeddingRocksDBWrapper's
//    l2_cache_size, fbgemm_gpu/tbe/ssd/training.py; CacheLibCache, fbgemm_gpu/src/
//    split_embeddings_cache/cachelib_cache.cpp): an item is the 8-byte row id, the row, and
//    CacheLib's 32-byte item header.
//  * Both sizes are per TBE: TorchRec groups tables whose fused params are equal (KeyValueParams
//    included) into one TBE (group_tables, torchrec/distributed/embedding_sharding.py line 570-620).
//  * TorchRec's planner charges a key-value table min(max_l1_cache_size MB, 0.2 x its bytes) of
//    device memory, its whole bytes of SSD and no host memory (calculate_shard_storages,
//    planner/shard_estimators.py line 416-436 and 470-480): the L2 is not in its DDR budget.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "edo/model/tune.h"

namespace edo::tuner {

struct KeyValueSizing {
  uint64_t device_cache_rows = 0;  // the replay's L1 rows
  uint64_t host_cache_rows = 0;    // the replay's L2 rows
  uint64_t max_l1_cache_mb = 0;    // KeyValueParams.max_l1_cache_size
  uint64_t l1_sets = 0;            // the sets TorchRec then builds (32 rows each), >= the replay's rows
  uint64_t l2_cache_gb = 0;        // KeyValueParams.l2_cache_size (0: no L2)
};

// The sizes for an ssd choice's params on a table of `rows` rows of `dim` elements of
// `element_bytes`; nullopt (and why_not, one line) when the params lack the cache rows or
// TorchRec cannot build an L1 that large.
std::optional<KeyValueSizing> key_value_sizing(const model::StrategyParams& p, uint64_t rows, uint32_t dim, uint32_t element_bytes,
                                               std::string& why_not);

// The row format an ssd choice keeps its rows in: its spec when that is a row format (plan
// import requires one), else the table's recorded dtype ("fp32" when none).
std::string ssd_row_format(const model::TuneCandidate& c, const model::TuneTable& t);

// The plan's (JSON, YAML) view of an ssd choice's KeyValueParams: {"max_l1_cache_size" (MB),
// "l2_cache_size" (GB), "l1_rows"}, or null when TorchRec's SSD TBE cannot hold it (rows not
// FP32/FP16, or no sizes: why in the TorchRec export's edo_only_why).
nlohmann::ordered_json key_value_params_json(const model::TuneCandidate& c, const model::TuneTable& t);

}  // namespace edo::tuner
