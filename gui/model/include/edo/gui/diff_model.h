// Two recordings side by side, one row per table name: each metric's "before → after" and
// its change (`edo diff`). Rows present in only one recording say which.
#pragma once

#include "edo/gui/recording_diff.h"
#include "edo/gui/table_model_base.h"

namespace edo::gui {

class DiffModel : public TableModelBase {
  Q_OBJECT
 public:
  enum Columns { kName, kStatus, kFirstMetric };
  explicit DiffModel(QObject* parent = nullptr);
  void setDiff(std::shared_ptr<const RecordingDiff> diff);
  const RecordingDiff* diff() const { return diff_.get(); }
  // False for a metric column that is 0 for every table on both sides (no gradients
  // recorded, say): the view hides it.
  bool columnHasData(int column) const;

 protected:
  int rows() const override;
  QVariant cell(int row, int column, int role) const override;

 private:
  std::shared_ptr<const RecordingDiff> diff_;
};

}  // namespace edo::gui
