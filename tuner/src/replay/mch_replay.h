// A replay of TorchRec's managed-collision ("zero collision hashing") module on a job's own id
// stream (issue 35 point 4): what a table of N slots would serve, admit and evict, step by step,
// before anyone sizes N by hand.
//
// It follows torchrec/modules/mc_modules.py (torchrec 1.9.2), MCHManagedCollisionModule:
//  * forward = profile, then remap. profile() appends the step's ids to a history buffer of
//    int(first step's ids x eviction_interval x 1.25) entries (ids past its end are left out of
//    the history, not of the lookup) and, every eviction_interval steps (current_iter -
//    last_eviction_iter == eviction_interval, iterations counted from 1), coalesces it:
//    torch.unique (ascending ids, counts, the last step each was seen), ids sorted by count
//    descending (stable), matched against the slots' sorted raw ids (searchsorted), then the
//    policy scores [slots..., new ids...] and the top N stay (_compute_selected_eviction_and_
//    replacement_indices: argsort descending, stable). The i-th evicted slot takes the i-th
//    selected new id and its metadata; the slots are sorted by raw id again (stable), carrying
//    their rows (_mch_remapped_ids_mapping) and metadata.
//  * The slot at sorted position N-1 scores highest whatever it holds (the policies set its count
//    to INT64_MAX and its last access to now: "avoid last element of zch"), so it is never
//    evicted; its row, N-1 at first, is where every miss goes (_mch_remap's zch_index).
//  * remap(): an id found among the sorted raw ids (searchsorted on all but the last, then
//    compared) is a hit and reads its slot's row; any other id reads row N-1.
//  * Policies: DistanceLFU_EvictionPolicy (what torchrec's own adapter, mc_adapter.py, builds:
//    the default here) scores count / (now - last access + 1)^decay in float32 (torch.div of
//    int64 counts by a float32 power); LFU_EvictionPolicy scores the int64 count;
//    LRU_EvictionPolicy scores -(now - last access + 1)^decay in float32. Empty slots hold
//    INT64_MAX with count 0 and last access 0.
// Checked against torchrec's own module on the same ids (tests/integration/torch/mch_check.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edo::tuner {

enum class MchPolicy { kDistanceLfu, kLfu, kLru };

const char* mch_policy_name(MchPolicy p);  // "distance_lfu", "lfu", "lru"
// Throws std::invalid_argument naming the accepted names.
MchPolicy mch_policy_from_name(const std::string& name);

struct MchConfig {
  uint64_t slots = 0;              // zch_size (N); at least 2: one of them is the miss row
  uint32_t eviction_interval = 1;  // steps between evictions
  MchPolicy policy = MchPolicy::kDistanceLfu;
  double decay_exponent = 1.0;     // DistanceLFU and LRU
};

struct MchStats {
  uint64_t steps = 0;
  uint64_t lookups = 0;
  uint64_t hits = 0;             // ids found in a slot of their own
  uint64_t miss_row_reads = 0;   // lookups that read row N-1: every miss, and a hit whose slot's row is N-1
  // Hits (not on the miss row) of an id admitted at this very step's eviction round: profile()
  // runs before remap(), so such an id reads a row that held another id (or nothing) until now.
  uint64_t fresh_reads = 0;
  uint64_t inserts = 0;          // ids admitted into a slot (empty or evicted)
  uint64_t evictions = 0;        // ids that held a slot and lost it
  uint64_t evictions_runs = 0;   // coalescing rounds

  double hit_rate() const { return lookups ? double(hits) / double(lookups) : 0.0; }
  // Lookups served by a row no other id shares: hits whose row is not the miss row.
  double own_row_rate() const { return lookups ? double(lookups - miss_row_reads) / double(lookups) : 0.0; }
  // Lookups read from a row their id held before this step: the rows the model has trained
  // for them (own rows, less the reads of rows just reassigned).
  double trained_row_rate() const {
    return lookups ? double(lookups - miss_row_reads - fresh_reads) / double(lookups) : 0.0;
  }
  double insert_rate() const { return lookups ? double(inserts) / double(lookups) : 0.0; }
  double eviction_rate() const { return lookups ? double(evictions) / double(lookups) : 0.0; }
};

// Replays `steps` (each step's ids in order) through the module. Lookups, hits and misses are
// counted from step `score_from` on (the earlier steps warm the table); inserts and evictions
// likewise. Throws std::invalid_argument for fewer than 2 slots, an interval of 0, or an id of
// INT64_MAX (the module's empty-slot marker).
MchStats replay_mch(const std::vector<std::vector<int64_t>>& steps, const MchConfig& c, size_t score_from = 0);

}  // namespace edo::tuner
