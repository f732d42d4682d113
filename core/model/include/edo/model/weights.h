// A weight snapshot of one table: the rows that represent it for the tuner's error estimate
// (`edo record --weights` / EDO_WEIGHTS=1: the PyTorch hook or edo_table_weights() hands the
// weights over; the tracer keeps the hottest rows and a uniform sample of the rest).
//
// The tuner's error is access-frequency weighted (docs/tuning.md "Error"): hot rows are counted
// exactly, the sample stands for the rows it was drawn from (a Horvitz-Thompson estimate:
// each sampled row weighs population / sampled rows).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edo::model {

struct WeightSnapshot {
  int64_t session_id = 0;
  std::string table;          // the table's name in that session
  std::string dtype;          // element type of `values` ("f32", "f16", "bf16", "f8e4m3", "i8", "u8")
  uint32_t dim = 0;
  uint64_t table_rows = 0;    // rows of the table when the snapshot was taken
  // Rows the uniform sample was drawn from (the table's rows minus the hot rows); 0 when the
  // snapshot holds the whole table.
  uint64_t population = 0;
  uint64_t hot_count = 0;     // rows[0, hot_count) are the hottest rows, the rest the sample
  std::vector<uint64_t> rows; // row ids
  std::string values;         // rows.size() x dim elements of `dtype`, row-major, little endian
  // Bumped by whoever changes the snapshot; the store rewrites a snapshot only when its
  // revision changed since it last wrote it (snapshots are large, saves are frequent).
  uint64_t revision = 0;

  uint64_t sampled() const { return rows.size() - hot_count; }
  // How many table rows entry i stands for: 1 for a hot row, population / sampled for a
  // sampled row.
  double inclusion_weight(size_t i) const {
    if (i < hot_count || sampled() == 0) return 1.0;
    return static_cast<double>(population) / static_cast<double>(sampled());
  }
  // True when the arrays agree with each other (values hold rows x dim elements of dtype).
  bool consistent() const;
};

}  // namespace edo::model
