// SSD-tier candidates (issue 35 point 2): the whole table on the SSD behind two caches, as
// FBGEMM's SSD TBE keeps it (ssd_replay.h): a device cache of some rows (L1) and a host cache
// of more (L2). Each candidate's hit rates are the held-out part of the table's recorded order
// replayed through both levels (fitted on the first 70 %, scored on the rest, as cache_replay.h
// cuts it); its bytes are per tier; its step time is the baseline's lookups (read from the
// device cache as from the table) plus what the misses cost:
//   L1 misses per step x row bytes / the host link, and
//   L2 misses per step x one row-sized random read at queue depth 32 (the device profile's
//   storage figures, `edo bench --storage DIR --save-device NAME`: 1 / row_qd32 reads per s),
// or, when the profile has no storage figures, TorchRec's planner default for an SSD kernel:
// 100 MiB/s (SSD_MEM_BW = 100 * 1024 * 1024 / 1000 bytes/ms, torchrec 1.9.2,
// torchrec/distributed/planner/constants.py:30), row bytes at that rate, said in the candidate.
// The rows are the table's own: error 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "candidates.h"
#include "edo/kernels/storage_probe.h"
#include "workload.h"

namespace edo::tuner {

// TorchRec's planner's SSD bandwidth (above), bytes per second.
inline constexpr double kTorchRecSsdBytesPerS = 100.0 * 1024 * 1024;

// What the SSD tier's costs are made of: the host link and the storage, each with its source.
struct SsdLinks {
  double host_link_gbs = 25;  // the CPU backend's modelled link, or the device profile's
  std::string host_link_basis = "25 GB/s: nominal (the CPU backend's modelled host link)";
  std::optional<kernels::StorageFigures> storage;  // measured; unset: TorchRec's default
  std::string storage_source;                       // the profile it came from
};

// The tiers' limits a group's candidates are offered under (TuneOptions::host_budget_bytes,
// ssd_budget_bytes; 0: none).
struct TierBudgets {
  uint64_t host = 0, ssd = 0;
};

// Why a group gets no ssd candidate ("" when it gets them). Offered for a table that does not
// fit the host budget (its recorded bytes are more than --host-budget), or, with --ssd-budget,
// for one that does not fit what the device budget leaves it (TableGroup::budget_left_bytes);
// never for a table read whole, shared with another, trained (FBGEMM's SSD TBE keeps the
// optimizer state in its rows: not modelled here) or without a usable recorded order.
std::string ssd_not_offered(const TableGroup& g, const TierBudgets& budgets);

// The device bytes of an L1 of `cache_rows` rows (FBGEMM's SSD TBE, training.py:565-655):
// ceil(cache_rows / 32) sets of 32 slots of lxu_cache_weights (slots x row bytes),
// lxu_cache_state and lru_state (slots x 8 each, int64).
uint64_t ssd_device_cache_bytes(uint64_t cache_rows, uint64_t row_bytes);

// The step time the misses add (us): `fetches` rows per step over the host link and `reads`
// rows per step from the SSD. `basis` says how the SSD's part was obtained.
double ssd_added_us(double fetches, double reads, uint64_t row_bytes, const SsdLinks& links, std::string& basis);

// Appends the group's ssd candidates (strategy "ssd", measured as the baseline plus
// Candidate::added_us) to `out`, when offered.
void add_ssd_candidates(const TableGroup& g, const TierBudgets& budgets, const SsdLinks& links, std::vector<Candidate>& out);

}  // namespace edo::tuner
