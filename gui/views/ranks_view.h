// Ranks: every rank of a distributed job side by side (issue 22). On top, per table, the
// imbalance at a glance (the busiest rank against the mean, as a bar); below, per rank its
// node, pid, steps, time, peak memory and lookups of each table (bars: against the busiest rank).
#pragma once

#include <QWidget>

#include "edo/gui/recording/recording.h"

class QLabel;
class QTableView;

namespace edo::gui {

class ImbalanceModel;
class RanksModel;

class RanksView : public QWidget {
  Q_OBJECT
 public:
  explicit RanksView(QWidget* parent = nullptr);
  void setRecording(RecordingPtr recording);
  RanksModel* ranks() const { return ranks_; }
  ImbalanceModel* imbalance() const { return imbalance_; }

 private:
  RanksModel* ranks_;
  ImbalanceModel* imbalance_;
  QLabel* summary_;
  QTableView* imbalance_view_;
  QTableView* ranks_view_;
  QLabel* empty_;
};

}  // namespace edo::gui
