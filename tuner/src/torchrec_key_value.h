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
//  * The L1 is FBGEMM's 32-way set-associative device cache: cache_sets =
//    max(int(cache_load_factor x rows / 32), 1), the load factor from CacheParams.load_factor
//    (0.2 when unset), capped at max_l1_cache_size MB / 32 / element bytes / dim
//    (_populate_ssd_tbe_params, torchrec/distributed/batched_embedding_kernel.py line 343-407).
//  * The L2 is a CacheLib LRU of l2_cache_size GB in host memory (EmbeddingRocksDBWrapper's
//    l2_cache_size, fbgemm_gpu/tbe/ssd/training.py; CacheLibCache, fbgemm_gpu/src/
//    split_embeddings_cache/cachelib_cache.cpp): an item is the 8-byte row id, the row, and
//    CacheLib's 32-byte item header.
//  * Both sizes are per TBE: TorchRec groups tables whose fused params are equal (KeyValueParams
//    included, the load factor left out) into one TBE (_get_grouping_fused_params,
//    torchrec/distributed/embedding_sharding.py line 471-496).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace edo::tuner {

struct KeyValueSizing {
  uint64_t device_cache_rows = 0;  // the replay's L1 rows
  uint64_t host_cache_rows = 0;    // the replay's L2 rows
  uint64_t l1_sets = 0;            // FBGEMM's L1 sets (32 rows each) holding device_cache_rows
  uint64_t max_l1_cache_mb = 0;    // KeyValueParams.max_l1_cache_size
  uint64_t l2_cache_gb = 0;        // KeyValueParams.l2_cache_size (0: no L2)
  double load_factor = 0;          // CacheParams.load_factor giving exactly l1_sets sets
};

// The sizes for an ssd choice's params (JSON text) on a table of `rows` rows of `dim` elements
// of `element_bytes`; nullopt (and why_not, one line) when the params lack the cache rows.
std::optional<KeyValueSizing> key_value_sizing(const std::string& params_json, uint64_t rows, uint32_t dim,
                                               uint32_t element_bytes, std::string& why_not);

}  // namespace edo::tuner
