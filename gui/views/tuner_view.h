// Tuner: the latest `edo tune` result of the recording (Pareto chart of whole plans with the
// plan and budget marked, the plan per table with its savings, every candidate measured), a
// form to run the tuner from here (budget, error limit, backend, time limit; progress bar and
// Cancel), Replan for another budget from the measured candidates, and export of the plan as
// JSON, YAML or TorchRec Python.
#pragma once

#include <QWidget>

#include "edo/gui/recording/recording.h"
#include "edo/gui/tune/tune_models.h"
#include "edo/tuner/tuner.h"

class QChartView;
class QComboBox;
class QDoubleSpinBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QSplitter;
class QTableView;

namespace edo::gui {

class TuneRunner;

class TunerView : public QWidget {
  Q_OBJECT
 public:
  // interactive: export asks for a file and errors open dialogs.
  explicit TunerView(bool interactive, QWidget* parent = nullptr);
  void setRecording(RecordingPtr recording);
  // The export buttons again (the recording's TorchRec facts arrived: RecordingLoader::
  // torchrecFactsReady). TorchRec's export waits for them.
  void refreshExports();
  bool hasTorchRecFacts() const;

  TuneResultPtr result() const { return result_; }
  PlanModel* plan() const { return plan_; }
  CandidatesModel* candidates() const { return candidates_; }
  TuneRunner* runner() const { return runner_; }
  // The form's options (budget parsed: throws std::invalid_argument with a one-line reason).
  tuner::TuneOptions options() const;
  void setBudget(const QString& text);
  void setMaxError(const QString& text);    // a number, "none", or empty: the library's default
  void setBackend(const QString& backend);  // "auto", "cpu" or "cuda"
  // Runs the tuner with the form's options; false with the reason in a dialog (or the status
  // line) when the form is not valid.
  bool runTune();
  void cancelTune();
  bool replan();
  // Writes the shown plan: format "json", "yaml" or "torchrec", the document `edo export`
  // writes (tuner::plan_document; TorchRec's with the recording's facts, once they are in).
  // Returns an error, or "".
  QString exportPlan(const QString& format, const QString& path) const;

 Q_SIGNALS:
  void resultShown();

 private:
  void showResult(TuneResultPtr result, const QString& note);
  void setBusy(bool busy);
  void say(const QString& text, bool error);
  void exportWithDialog(const QString& format);
  // The constructor's parts: the run form, the status line with the export buttons, the chart,
  // plan and candidates, and the runner's signals.
  QWidget* makeForm();
  QHBoxLayout* makeStatusRow();
  QSplitter* makeResultPanes();
  void connectRunner();

  bool interactive_;
  RecordingPtr recording_;
  TuneResultPtr result_;
  QString running_path_;  // the file the runner measures
  TuneRunner* runner_;
  PlanModel* plan_;
  CandidatesModel* candidates_;
  QSortFilterProxyModel* candidates_proxy_;
  QLineEdit* budget_;
  QLineEdit* max_error_;
  QComboBox* backend_;
  QComboBox* target_device_;
  QDoubleSpinBox* time_limit_;
  QPushButton* run_;
  QPushButton* cancel_;
  QPushButton* replan_;
  QList<QPushButton*> exports_;
  QProgressBar* progress_;
  QLabel* status_;
  QLabel* summary_;
  QChartView* chart_view_;
  QComboBox* table_filter_;
  QTableView* plan_view_;
  QTableView* candidates_view_;
};

}  // namespace edo::gui
