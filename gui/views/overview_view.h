// Overview: the traced process(es), totals, the memory chart with its peak, the biggest
// tables by bytes and by lookups, and a visible warning when the tracer dropped events.
#pragma once

#include <QWidget>

#include "edo/gui/recording/recording.h"

class QChartView;
class QComboBox;
class QLabel;
class QTableView;

namespace edo::gui {

class SessionsModel;
class TopTablesModel;

class OverviewView : public QWidget {
  Q_OBJECT
 public:
  explicit OverviewView(QWidget* parent = nullptr);
  void setRecording(RecordingPtr recording);

 Q_SIGNALS:
  void openTable(const QString& name);
  void memoryChartShown();  // the memory chart now shows the current recording

 private:
  void showTimeline(int index);
  void updateHeader();

  RecordingPtr recording_;
  int chart_generation_ = 0;
  QString charted_;  // which recording the memory chart was drawn from (path and shape)
  QLabel* header_;
  QLabel* dropped_;
  QList<QLabel*> card_values_;
  QList<QLabel*> card_captions_;
  QTableView* sessions_;
  QComboBox* session_picker_;
  QChartView* chart_view_;
  SessionsModel* sessions_model_;
  TopTablesModel* by_bytes_;
  TopTablesModel* by_lookups_;
};

}  // namespace edo::gui
