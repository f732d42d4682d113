// The Ranks view's models (issue 22): every rank of a distributed job side by side (node, pid,
// steps, time, peak memory, lookups, and its lookups of each table), and per table how
// unbalanced the ranks' lookups are (the busiest rank against the mean).
#pragma once

#include <QAbstractTableModel>

#include <string>
#include <vector>

#include "edo/gui/recording/recording.h"
#include "edo/gui/table_model_base.h"
#include "edo/model/rank_view.h"

namespace edo::gui {

// One row per rank; the fixed columns, then one column of lookups per table (the tables in
// the recording's order: largest first).
class RanksModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Columns { kRank, kNode, kPid, kSteps, kTime, kPeak, kLookups, kFirstTable };
  explicit RanksModel(QObject* parent = nullptr);
  void setRecording(RecordingPtr recording);
  const std::vector<model::RankView>& ranks() const { return ranks_; }
  const std::vector<std::string>& tables() const { return tables_; }

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  std::vector<model::RankView> ranks_;
  std::vector<std::string> tables_;  // tables some rank read
};

// One row per table some rank read, most unbalanced first. ShareRole of the imbalance column:
// how far towards "one rank does it all" the busiest rank is ((ratio - 1) / (ranks - 1)).
class ImbalanceModel : public TableModelBase {
  Q_OBJECT
 public:
  enum Columns { kTable, kRanks, kBusiestRank, kBusiest, kMean, kImbalance, kColumnCount };
  explicit ImbalanceModel(QObject* parent = nullptr);
  void setRecording(RecordingPtr recording);
  const std::vector<model::TableImbalance>& rowsData() const { return rows_; }

 protected:
  int rows() const override;
  QVariant cell(int row, int column, int role) const override;

 private:
  std::vector<model::TableImbalance> rows_;
  size_t ranks_ = 0;
};

}  // namespace edo::gui
