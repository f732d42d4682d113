// Diff: a second recording beside the open one; per-table changes side by side (the
// comparison `edo diff` prints), the tables' bytes before and after as bars, and, when the
// recordings have a training loss (the PyTorch hooks'), both loss curves over the steps (a
// plan's trial run beside its baseline, `edo diff --plan`).
// The second recording is "before" and the open one "after", as the docs say:
// `edo dashboard after.edodb --compare before.edodb` shows `edo diff before.edodb after.edodb`.
#pragma once

#include <QWidget>

#include <memory>

#include "edo/gui/recording/recording.h"
#include "edo/gui/diff/recording_diff.h"

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
  void setRecording(RecordingPtr recording);  // the open recording ("after")
  void openOther(const QString& path);         // the recording to compare with ("before")
  DiffModel* model() const { return model_; }
  QString otherPath() const;  // the "before" recording (loaded or loading)
  // The pair the model's diff was computed from (empty while there is none): "before" is
  // the other recording, "after" the open one.
  QString diffBeforePath() const { return diff_before_; }
  QString diffAfterPath() const { return diff_after_; }

 Q_SIGNALS:
  void chooseOther();  // the "Open a recording to compare…" button
  void diffReady();
  void failed(const QString& path, const QString& reason);

 private:
  void recompute();

  RecordingPtr open_;   // "after"
  RecordingPtr other_;  // "before"
  QString diff_before_, diff_after_;
  RecordingLoader* loader_;
  DiffModel* model_;
  QLabel* header_;
  QPushButton* open_button_;
  QTreeView* tree_;
  QChartView* chart_view_;
  QChartView* loss_view_;  // hidden when neither recording has a loss
};

}  // namespace edo::gui
