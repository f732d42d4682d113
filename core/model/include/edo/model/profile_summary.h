// The read-side view of a profile that report, diff and the dashboard share: one entry per
// table name with its headline statistics. Tables of the same name recorded by several
// processes (torchrun ranks, DataLoader workers) are merged when their shapes agree.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "edo/model/profile.h"

namespace edo::model {

struct TableView {
  std::string name;
  uint64_t rows = 0;
  uint32_t dim = 0;
  std::string dtype;
  std::string device;
  uint64_t bytes = 0;        // weights
  uint64_t extra_bytes = 0;  // optimizer state and other memory owned by the table
  int sessions = 0;          // how many processes recorded it
  stats::TableAggregate aggregate;  // merged over sessions
  stats::TableSummary summary;
  std::vector<std::string> tied_with;  // other names on the same weights
  // Set when this name was registered on weights that an earlier name already owns (e.g. an
  // LM head tied to the input embedding): its bytes are that table's, not extra memory.
  std::string shares_weights_of;
};

// Tables sorted by bytes + extra_bytes (descending), then name.
std::vector<TableView> table_views(const Profile& profile);

// Human-readable byte count: "1.50 GiB", "512 B".
std::string format_bytes(uint64_t bytes);

}  // namespace edo::model
