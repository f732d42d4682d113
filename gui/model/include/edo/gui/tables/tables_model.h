// Every table of a recording, one row each, with the columns of `edo report` (shape, dtype,
// bytes with optimizer state, lookups, unique rows, coverage of the top 0.1/1/10 %, Zipf
// alpha, LRU hit rate at 1/10/50 %, ties, and the language-model columns: activation per step
// and LM head). While only the outline is loaded, the statistics
// columns read "…". A tied table whose reads are counted with its owner reads "(tied)" and
// "–", as in `edo report`.
#pragma once

#include "edo/gui/recording/recording.h"
#include "edo/gui/table_model_base.h"

namespace edo::gui {

class TablesModel : public TableModelBase {
  Q_OBJECT
 public:
  enum Columns {
    kName, kShape, kDtype, kDevice, kBytes, kWeights, kOptimizer, kGrads, kLookups, kUnique,
    kTop01, kTop1, kTop10, kZipf, kLru1, kLru10, kLru50, kTies,
    kActivation, kLmHead,  // issue 33: activation peak per step, the token table's LM head
    kColumnCount
  };
  explicit TablesModel(QObject* parent = nullptr);
  void setRecording(RecordingPtr recording);
  const model::TableView* table(int row) const;
  // Whether any table has optimizer state or gradients: otherwise Bytes is all weights and
  // the parts' columns say nothing (`edo report` drops them the same way).
  bool hasMemoryParts() const;
  // A table that shares another's weights and read nothing itself: its reads were counted
  // with the owner (`edo report` prints "(tied)" and dashes for it).
  static bool countedWithOwner(const model::TableView& t);

 protected:
  int rows() const override;
  QVariant cell(int row, int column, int role) const override;

 private:
  RecordingPtr recording_;
};

}  // namespace edo::gui
