// Diff: a second recording beside the open one; per-table changes side by side (the
// comparison `edo diff` prints) and the tables' bytes before and after as bars.
#pragma once

#include <QWidget>

#include <memory>

#include "edo/gui/recording.h"
#include "edo/gui/recording_diff.h"

class QChartView;
class QLabel;
class QPushButton;
class QTreeView;

namespace edo::gui {

class DiffModel;
class RecordingLoader;

class DiffView : public QWidget {
  Q_OBJECT
 public:
  explicit DiffView(QWidget* parent = nullptr);
  void setRecording(RecordingPtr recording);  // the open recording ("before")
  void openOther(const QString& path);         // the recording to compare with ("after")
  DiffModel* model() const { return model_; }
  QString otherPath() const;

 Q_SIGNALS:
  void chooseOther();  // the "Open a recording to compare…" button
  void diffReady();
  void failed(const QString& path, const QString& reason);

 private:
  void recompute();

  RecordingPtr before_;
  RecordingPtr after_;
  RecordingLoader* loader_;
  DiffModel* model_;
  QLabel* header_;
  QPushButton* open_button_;
  QTreeView* tree_;
  QChartView* chart_view_;
};

}  // namespace edo::gui
