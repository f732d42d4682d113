// The dashboard's window: File menu (open, recent files, compare with), drag and drop of
// .edodb files, the views as tabs, a progress bar while a recording loads, error dialogs with
// the one-line reason, and the window geometry and last view remembered between runs.
#pragma once

#include <QMainWindow>
#include <QStringList>

#include <functional>
#include <vector>

#include "edo/gui/recording/recording.h"

class QLabel;
class QMenu;
class QProgressBar;
class QStackedWidget;
class QTabWidget;

namespace edo::gui {

class DiffView;
class KernelsView;
class OverviewView;
class RanksView;
class RecordingLoader;
class TableDetailView;
class TablesView;
class TunerView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // interactive: errors open a dialog and settings are read and written; otherwise (the
  // --screenshot mode) errors are only signalled and nothing is remembered.
  explicit MainWindow(bool interactive = true, QWidget* parent = nullptr);
  ~MainWindow() override;

  void openFile(const QString& path);
  void compareWith(const QString& path);
  // "overview", "tables", "table", "kernels", "ranks", "tuner", "diff"; false for another name.
  bool showView(const QString& name);
  QString currentView() const;
  static QStringList viewNames();
  // Opens a table's detail; false when the recording has no table of that name.
  bool showTable(const QString& name);

  RecordingPtr recording() const { return recording_; }
  OverviewView* overviewView() const { return overview_; }
  TablesView* tablesView() const { return tables_; }
  TableDetailView* detailView() const { return detail_; }
  KernelsView* kernelsView() const { return kernels_; }
  RanksView* ranksView() const { return ranks_; }
  TunerView* tunerView() const { return tuner_; }
  DiffView* diffView() const { return diff_; }
  QStringList recentFiles() const;

 Q_SIGNALS:
  void outlineShown();                 // the view in sight shows the outline
  void recordingLoaded();              // statistics are in every view
  void loadFailed(const QString& reason);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void buildMenus();
  void showOutline(RecordingPtr recording);
  void showLoaded(RecordingPtr recording);
  void showFailure(const QString& path, const QString& reason);
  void chooseFile();
  void chooseComparison();
  void rememberRecent(const QString& path);
  void rebuildRecentMenu();
  // Hands the recording to the view in sight now and to every other view in the events that
  // follow; `done` once all have it (never, if another recording replaces it first).
  void setRecording(RecordingPtr recording, std::function<void()> done = {});
  void updateView(int generation, size_t index);

  bool interactive_;
  RecordingPtr recording_;
  std::vector<RecordingPtr> retired_;  // replaced recordings some view may still hold
  int update_generation_ = 0;
  std::vector<QWidget*> update_order_;
  std::function<void()> update_done_;
  RecordingLoader* loader_;
  QStackedWidget* pages_;
  QLabel* welcome_;
  QTabWidget* tabs_;
  OverviewView* overview_;
  TablesView* tables_;
  TableDetailView* detail_;
  KernelsView* kernels_;
  RanksView* ranks_;
  TunerView* tuner_;
  DiffView* diff_;
  QProgressBar* progress_;
  QLabel* status_;
  QMenu* recent_menu_;
  QString pending_view_;  // the view to show once a file is open (last view of a previous run)
};

}  // namespace edo::gui
