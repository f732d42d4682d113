// The most-read rows of one table: row id, reads, share of the table's lookups and the
// running share down the list.
#pragma once

#include "edo/gui/tables/table_detail.h"
#include "edo/gui/table_model_base.h"

namespace edo::gui {

class TopRowsModel : public TableModelBase {
  Q_OBJECT
 public:
  enum Columns { kRank, kRow, kReads, kShare, kCumulative, kColumnCount };
  explicit TopRowsModel(QObject* parent = nullptr);
  void setDetail(std::shared_ptr<const TableDetail> detail);

 protected:
  int rows() const override;
  QVariant cell(int row, int column, int role) const override;

 private:
  std::shared_ptr<const TableDetail> detail_;
  std::vector<uint64_t> cumulative_;
};

}  // namespace edo::gui
