// The two cache levels in front of an SSD-backed table (issue 35 point 2), replayed on a table's
// recorded order: what share of its lookups the device cache serves, what share the host cache
// serves, and how many rows are read from the SSD.
//
// The levels as FBGEMM's SSD TBE runs them (fbgemm_gpu at 71d6f8b22, the commit
// cache_policies.h cites; fbgemm_gpu/tbe/ssd/training.py and
// src/ssd_split_embeddings_cache/kv_db_table_batched_embeddings.cpp):
//  * L1, the device cache (lxu_cache_weights, cache_sets x 32 ways, LRU: training.py:565-655):
//    each batch's rows not in L1 are looked up and virtually inserted
//    (ssd_cache_populate_actions, training.py:2323-2345), then read from the backend with
//    ssd_db.get_cuda (training.py:2655-2664); the rows they displace are written back to the
//    backend with ssd_db.set_cuda (evict(), training.py:1875-1929).
//  * L2, the host cache of the backend (CacheLib, l2_cache_size GB: kv_db_table_batched_
//    embeddings.cpp:108-118): get() serves an L1 miss from L2 when the row is there, else reads
//    it from the SSD and then puts it into L2 (update_cache_and_storage with
//    FWD_ROCKSDB_READ, :470-553 and :175-213); set() of an L1 eviction also puts the row into
//    L2 (:432-468), and what L2 evicts goes to the SSD.
// So L2 is neither inclusive nor exclusive of L1: it is an LRU over the stream of L1's misses
// (reads) and L1's evictions (writes). That is what replay_two_level() models, reference by
// reference, with both levels fully associative LRU (L1 is 32-way set-associative in FBGEMM and
// CacheLib's LRU refreshes a row's position at most once a minute: both are approximated).
// For a trained table every row L1 holds has been updated (dirty): each L1 eviction is a write
// over the host link into L2, and a row L2 evicts after such a write is written to the SSD
// (with no L2, the L1 eviction goes straight to the SSD). A row L2 took from an SSD read and
// never had written back is clean: evicting it writes nothing.
// Hits are counted as in cache_policies.h: the lookup that brings a row in is the miss that
// fetched it, later lookups while it stays are hits; references before `split` only warm both
// levels.
#pragma once

#include <cstdint>

#include "cache_policies.h"

namespace edo::tuner {

struct TwoLevelCount {
  uint64_t refs = 0;         // references counted (from split on)
  uint64_t device_hits = 0;  // served by L1
  uint64_t host_hits = 0;    // missed L1, found in L2
  uint64_t ssd_reads = 0;    // missed both: read from the SSD
  uint64_t writebacks = 0;   // L1 evictions written to L2 (from split on)
  uint64_t ssd_writes = 0;   // dirty rows written to the SSD: L2's evictions of written-back rows,
                             // or every L1 eviction when there is no L2 (from split on)
  double device_rate() const { return share(device_hits); }
  double host_rate() const { return share(host_hits); }
  double ssd_rate() const { return share(ssd_reads); }
  // Any count per counted reference (writebacks, ssd_writes).
  double share(uint64_t n) const { return refs ? static_cast<double>(n) / static_cast<double>(refs) : 0.0; }
};

// L1 of `device_slots` rows and L2 of `host_slots` rows (either may be 0: no such level).
TwoLevelCount replay_two_level(const ReplayStream& s, uint64_t device_slots, uint64_t host_slots);

}  // namespace edo::tuner
