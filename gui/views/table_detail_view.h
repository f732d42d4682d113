// Table detail: one table's rank-frequency curve with its Zipf fit, coverage curve with a
// cursor readout, LRU hit rate with the cost of each cache size, hot-set drift, and its
// most-read rows. The chart data is built off the UI thread.
#pragma once

#include <QWidget>

#include <memory>

#include "edo/gui/recording/recording.h"
#include "edo/gui/tables/table_detail.h"

class QChartView;
class QComboBox;
class QLabel;
class QTableView;

namespace edo::gui {

class TopRowsModel;

class TableDetailView : public QWidget {
  Q_OBJECT
 public:
  explicit TableDetailView(QWidget* parent = nullptr);
  void setRecording(RecordingPtr recording);
  // Shows a table; false when the recording has no table of that name.
  bool showTable(const QString& name);
  QString currentTable() const { return current_; }
  std::shared_ptr<const TableDetail> detail() const { return detail_; }
  // What the coverage readout says for a share of rows (the text the cursor shows).
  QString coverageReadout(double row_share) const;
  QTableView* topRows() const { return top_rows_; }

 Q_SIGNALS:
  void detailReady();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void setDetail(std::shared_ptr<const TableDetail> detail);
  void clearCharts(const QString& why);
  // Widens the most-read rows' panel to what its columns need (long row ids and counts), so
  // that the last column keeps at least its header's width.
  void fitTopRows();

  RecordingPtr recording_;
  QString current_;
  std::shared_ptr<const TableDetail> detail_;
  int request_ = 0;
  QComboBox* picker_;
  QLabel* summary_;
  QChartView* rank_view_;
  QChartView* coverage_view_;
  QChartView* lru_view_;
  QChartView* drift_view_;
  QLabel* readout_;
  QWidget* rows_host_;
  QTableView* top_rows_;
  TopRowsModel* top_rows_model_;
};

}  // namespace edo::gui
