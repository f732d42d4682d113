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
//
// A trained table (issue 35 points 2-3) is offered the tier too, as TorchRec's KEY_VALUE kernel
// trains it (KeyValueEmbeddingBag, torchrec/distributed/batched_embedding_kernel.py line 3225-3240,
// builds FBGEMM's SSDTableBatchedEmbeddingBags from _populate_ssd_tbe_params, without
// kv_zch_params). In fbgemm_gpu 1.9.0 (fbgemm_gpu/tbe/ssd/training.py):
//  * the optimizer is EXACT_ROWWISE_ADAGRAD, PARTIAL_ROWWISE_ADAM or ADAM (line 353-357);
//  * its state is NOT in the rows: the rows carry state only with kv_zch_params'
//    enable_optimizer_offloading (cache_row_dim, line 1612-1627), which only the zero-collision
//    kernels set (batched_embedding_kernel.py line 639-642). Without it the state is one device
//    tensor for every row of the table (ssd_state_splits, split_embedding_configs.py line
//    242-290: dev_size = the rows' total, placement DEVICE).
// So the candidate trains with row-wise Adagrad: one fp32 per row (state_size_nbytes) on the
// device, for every row; Adam's two fp32 per element on the device would be twice the table
// the tier exists to move off. A job trained with another optimizer gets the candidate with
// optimizer "rowwise_adagrad" (as the optimizer-state lever, candidates.h) and its params'
// "optimizer_why" saying so; a job already on row-wise Adagrad keeps its optimizer.
// A training step updates every row it reads in L1 (in place); what L1 evicts is dirty and is
// written over the host link into L2, and what L2 evicts after such a write goes to the SSD
// (ssd_replay.h counts both). Those writes cost the link (row bytes each) and the SSD at its
// measured sequential write bandwidth: the SSD backend is RocksDB, whose writes go to a
// memtable and reach the disk as sequential log and SST files, never as random row writes.
// Without storage figures: TorchRec's 100 MiB/s for them too.
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
// never for a table read whole, shared with another or without a usable recorded order.
std::string ssd_not_offered(const TableGroup& g, const TierBudgets& budgets);

// The device bytes of an L1 of `cache_rows` rows (FBGEMM's SSD TBE, training.py:565-655):
// ceil(cache_rows / 32) sets of 32 slots of lxu_cache_weights (slots x row bytes),
// lxu_cache_state and lru_state (slots x 8 each, int64).
uint64_t ssd_device_cache_bytes(uint64_t cache_rows, uint64_t row_bytes);

// The step time the misses add (us): `fetches` rows per step over the host link and `reads`
// rows per step from the SSD. `basis` says how the SSD's part was obtained.
double ssd_added_us(double fetches, double reads, uint64_t row_bytes, const SsdLinks& links, std::string& basis);

// The optimizer an ssd candidate of a trained group trains with: "" (the job's own: it is
// row-wise Adagrad already) or "rowwise_adagrad"; `why` says why it changes (one line).
std::string ssd_optimizer(const TableGroup& g, std::string& why);

// The device bytes of the SSD TBE's row-wise Adagrad state: one fp32 per row of the table.
inline uint64_t ssd_optimizer_state_bytes(uint64_t rows) { return rows * 4; }

// The step time a trained table's write-back adds (us): `writebacks` rows per step over the
// host link and `ssd_writes` rows per step to the SSD. `basis` says how the SSD's part was obtained.
double ssd_writeback_us(double writebacks, double ssd_writes, uint64_t row_bytes, const SsdLinks& links, std::string& basis);

// Appends the group's ssd candidates (strategy "ssd", measured as the baseline plus
// Candidate::added_us) to `out`, when offered.
void add_ssd_candidates(const TableGroup& g, const TierBudgets& budgets, const SsdLinks& links, std::vector<Candidate>& out);

}  // namespace edo::tuner
