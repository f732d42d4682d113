// Every table of a recording, one row each, with the columns of `edo report` (shape, dtype,
// bytes with optimizer state, lookups, unique rows, coverage, Zipf alpha, LRU hit rate, ties).
// While only the outline is loaded, the statistics columns read "…".
#pragma once

#include "edo/gui/recording.h"
#include "edo/gui/table_model_base.h"

namespace edo::gui {

class TablesModel : public TableModelBase {
  Q_OBJECT
 public:
  enum Columns {
    kName, kShape, kDtype, kDevice, kBytes, kWeights, kOptimizer, kGrads, kLookups, kUnique,
    kTop1, kTop10, kZipf, kLru10, kTies, kColumnCount
  };
  explicit TablesModel(QObject* parent = nullptr);
  void setRecording(RecordingPtr recording);
  const model::TableView* table(int row) const;
  // Whether any table has optimizer state or gradients: otherwise Bytes is all weights and
  // the parts' columns say nothing (`edo report` drops them the same way).
  bool hasMemoryParts() const;

 protected:
  int rows() const override;
  QVariant cell(int row, int column, int role) const override;

 private:
  RecordingPtr recording_;
};

}  // namespace edo::gui
