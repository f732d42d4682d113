// The biggest tables of a recording by one measure (bytes or lookups), with each one's share
// of the recording's total, for the overview.
#pragma once

#include "edo/gui/recording/recording.h"
#include "edo/gui/table_model_base.h"

namespace edo::gui {

class TopTablesModel : public TableModelBase {
  Q_OBJECT
 public:
  enum class Measure { kBytes, kLookups };
  enum Columns { kName, kValue, kShare, kColumnCount };
  TopTablesModel(Measure measure, int limit, QObject* parent = nullptr);
  void setRecording(RecordingPtr recording);

  struct Entry {
    std::string name;
    uint64_t value = 0;
    double share = 0.0;  // of the sum over all tables
  };
  const std::vector<Entry>& entries() const { return entries_; }

 protected:
  int rows() const override;
  QVariant cell(int row, int column, int role) const override;

 private:
  Measure measure_;
  int limit_;
  std::vector<Entry> entries_;
};

}  // namespace edo::gui
