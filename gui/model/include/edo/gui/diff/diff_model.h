// Two recordings side by side, as `edo diff` prints them: one row per table name (its shape
// before and after, and what changed), under it one row per changed metric with its value
// before, after and the change. A table found in only one recording says which, with its
// numbers on that side.
#pragma once

#include <QAbstractItemModel>

#include <memory>

#include "edo/gui/diff/recording_diff.h"

namespace edo::gui {

class DiffModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Columns { kName, kBefore, kAfter, kChange, kColumnCount };
  explicit DiffModel(QObject* parent = nullptr);
  void setDiff(std::shared_ptr<const RecordingDiff> diff);
  const RecordingDiff* diff() const { return diff_.get(); }

  QModelIndex index(int row, int column, const QModelIndex& parent = QModelIndex()) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QVariant tableData(const TableDiff& t, int column, int role) const;
  QVariant metricData(const TableDiff& t, size_t metric, int column, int role) const;

  std::shared_ptr<const RecordingDiff> diff_;
  // Per table: the metrics shown under it (changed ones; every one for a one-sided table).
  std::vector<std::vector<size_t>> shown_;
};

}  // namespace edo::gui
