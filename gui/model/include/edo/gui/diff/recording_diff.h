// What changed between two recordings, table by table: the comparison `edo diff` prints
// (same metrics, same matching by name).
#pragma once

#include <QString>

#include <string>
#include <vector>

#include "edo/gui/recording/loss_curve.h"
#include "edo/gui/recording/recording.h"

namespace edo::gui {

struct DiffMetric {
  const char* key;      // as in `edo diff --json` (the first one is the table's total bytes)
  QString title;
  bool share;           // a share in [0, 1]: changes in percentage points
  double (*get)(const model::TableView&);
};
const std::vector<DiffMetric>& diff_metrics();

struct TableDiff {
  enum class Status { kBoth, kOnlyBefore, kOnlyAfter };
  std::string name;
  Status status = Status::kBoth;
  QString shape_before, shape_after;  // "rows x dim dtype"
  std::vector<double> before, after;  // per diff_metrics(); empty on the missing side
};

struct RecordingDiff {
  QString before_path, after_path;
  std::vector<TableDiff> tables;  // in both (by name), then only before, then only after
  int64_t peak_before = 0, peak_after = 0;
  model::TableMemory memory_before, memory_after;  // table memory in its named parts
  LossCurve loss_before, loss_after;               // the training loss of each (empty: none recorded)
};

RecordingDiff diff_recordings(const Recording& before, const Recording& after);

}  // namespace edo::gui
