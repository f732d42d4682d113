// Placement of a plan's tables over N devices (`edo tune --devices N`, docs/tuning.md
// "Placement"): every table goes whole onto one device (table-wise), or is split into k equal
// ranges of rows (row-wise) or of columns (column-wise) on k devices, so that each device holds
// at most its budget and bytes and measured lookups per step are balanced.
//
// Method (deterministic): tables largest first (bytes, then lookups, then name). A table whose
// lookups are more than 1.25 times a device's fair share (all lookups / N) asks for k = ceil(its
// lookups / fair share) row-wise shards; any other table goes table-wise. When no device has room for the
// piece, k grows (k = the smallest that fits). Row-wise needs k <= rows; column-wise is used
// only where row-wise cannot split (fewer rows than k) and the dim splits evenly into widths
// divisible by 4 (TorchRec's rule for column-wise shards, ParameterConstraints.min_partition).
// Each piece goes to the device(s) where it leaves the lowest balance score: the larger of
// (bytes / mean bytes per device) and (lookups / mean lookups per device) after placing it;
// ties go to fewer bytes, then the lower device index. When this greedy leaves some table no
// room, two more passes run: tables larger than a device or split for their lookups take the
// most shards they can (N down to 1), then every table does. There is no communication model: the
// row-wise and column-wise shards' all-to-all costs are TorchRec's planner's to weigh.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edo/model/tune.h"

namespace edo::tuner {

struct PlacementItem {
  std::string name;
  uint64_t device_bytes = 0;     // what the plan's choice holds on a device (weights, state, cache)
  double lookups_per_step = 0;   // measured (the recording's rows read per step)
  uint64_t rows = 0;             // 0: the format cannot be split by rows
  uint32_t dim = 0;              // 0: the format cannot be split by columns
};

struct DeviceLoad {
  uint32_t device = 0;
  uint64_t device_bytes = 0;
  double lookups_per_step = 0;
};

struct Placement {
  bool feasible = false;
  // Per item (input order): "table_wise", "row_wise" or "column_wise", and its shards (the
  // shards' bytes add up to the item's exactly).
  std::vector<std::string> sharding;
  std::vector<std::vector<model::TuneShard>> shards;
  std::vector<DeviceLoad> devices;  // one per device, index order
  std::string unplaced;             // infeasible: the first table that found no room
};

// Places `items` on `devices` devices of `budget_bytes` each. devices >= 1.
Placement place_tables(const std::vector<PlacementItem>& items, uint32_t devices, uint64_t budget_bytes);

// Each device's bytes and lookups per step in a plan over several devices (the sum of its
// choices' shards); one entry per device. Empty when result.devices <= 1 or there is no plan.
std::vector<DeviceLoad> device_loads(const model::TuneResult& result);

}  // namespace edo::tuner
