// Managed-collision candidates (issue 35 point 4): a table of N slots in front of an id space
// far larger than the rows the budget affords, as TorchRec's MCHManagedCollisionModule keeps it,
// with its hit, insert, collision and eviction rates predicted by replaying the table's
// recorded order (mch_replay.h) on the held-out part (cache_replay.h's 70 % cut). Its error
// is the held-out share of lookups not read from a row their id held before the step (a miss
// reads the miss row every other unslotted id shares; an id admitted that step reads the row
// another id trained): those lookups get no embedding of their own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "candidates.h"
#include "mch_replay.h"
#include "workload.h"

namespace edo::tuner {

// Bytes the module holds beside the N rows (torchrec 1.9.2, torchrec/modules/mc_modules.py):
// _init_buffers (lines 1140-1175): _mch_sorted_raw_ids and _mch_remapped_ids_mapping, int64
// per slot, and the one-element _mch_slots and _delimiter; _init_metadata_buffers (1177-1192):
// one int64 per slot for each of the policy's mch metadata (DistanceLFU: counts and
// last_access_iter, lines 884-896; LFU: counts; LRU: last_access_iter); _init_history_buffers
// (1194-1220): int(first batch's ids x eviction_interval x 1.25) int64 ids plus one int64 per
// entry for each history metadata (DistanceLFU and LRU: last_access_iter).
uint64_t mch_module_bytes(uint64_t slots, MchPolicy policy, double first_batch_ids, uint32_t eviction_interval);

// Why a group gets no managed-collision candidate ("" when it gets them). Offered only where
// it can help and is safe: the distinct ids the table read, in its recorded format, take more
// than the device budget leaves it when every other table keeps its recorded bytes (a table
// over the whole budget on its own counted as 0: it must shrink to a size not known yet)
// (TableGroup::budget_left_bytes; without a budget never); the
// table is not read whole (a tied head) and shares its weights with no other table; its
// recording has a usable ordered sample and counted steps.
std::string mch_not_offered(const TableGroup& g);

// Appends the group's managed-collision candidates (strategy "mch", measured as the baseline:
// measure_as 0) to `out`, when offered.
void add_mch_candidates(const TableGroup& g, const SizeFn& size, std::vector<Candidate>& out);

}  // namespace edo::tuner
