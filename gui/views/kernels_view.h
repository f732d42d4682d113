// Kernels: GPU kernels by total GPU time with the tables each one reads, and NVTX ranges
// with their counts, time, lookups and allocations.
#pragma once

#include <QWidget>

#include "edo/gui/recording/recording.h"

class QLabel;
class QTableView;

namespace edo::gui {

class KernelsModel;
class RangesModel;

class KernelsView : public QWidget {
  Q_OBJECT
 public:
  explicit KernelsView(QWidget* parent = nullptr);
  void setRecording(RecordingPtr recording);
  KernelsModel* kernels() const { return kernels_; }
  RangesModel* ranges() const { return ranges_; }

 private:
  KernelsModel* kernels_;
  RangesModel* ranges_;
  QTableView* kernels_view_;
  QTableView* ranges_view_;
  QLabel* kernels_empty_;
  QLabel* ranges_empty_;
};

}  // namespace edo::gui
