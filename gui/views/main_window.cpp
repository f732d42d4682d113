#include "main_window.h"

#include <QAction>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

#include <functional>
#include <memory>

#include <utility>
#include <QCloseEvent>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabWidget>

#include "diff_view.h"
#include "edo/gui/format.h"
#include "edo/gui/recording/recording_loader.h"
#include "kernels_view.h"
#include "overview_view.h"
#include "ranks_view.h"
#include "table_detail_view.h"
#include "tables_view.h"
#include "tuner_view.h"

namespace edo::gui {

namespace {
constexpr int kMaxRecent = 8;
const char* const kViewNames[] = {"overview", "tables", "table", "kernels", "ranks", "tuner", "diff"};

QStringList edodb_paths(const QMimeData* mime) {
  QStringList paths;
  if (!mime || !mime->hasUrls()) return paths;
  for (const QUrl& url : mime->urls())
    if (url.isLocalFile()) paths << url.toLocalFile();
  return paths;
}
}  // namespace

MainWindow::MainWindow(bool interactive, QWidget* parent) : QMainWindow(parent), interactive_(interactive) {
  setWindowTitle(tr("edo dashboard"));
  setAcceptDrops(true);
  loader_ = new RecordingLoader(this);
  connect(loader_, &RecordingLoader::outlineReady, this, &MainWindow::showOutline);
  connect(loader_, &RecordingLoader::loaded, this, &MainWindow::showLoaded);
  connect(loader_, &RecordingLoader::torchrecFactsReady, this, [this](RecordingPtr recording) {
    if (recording == recording_) tuner_->refreshExports();
  });
  connect(loader_, &RecordingLoader::failed, this, &MainWindow::showFailure);
  connect(loader_, &RecordingLoader::progress, this, [this](double fraction, const QString& what) {
    progress_->setValue(static_cast<int>(fraction * 1000));
    status_->setText(what);
  });

  pages_ = new QStackedWidget(this);
  welcome_ = new QLabel(pages_);
  welcome_->setAlignment(Qt::AlignCenter);
  welcome_->setWordWrap(true);
  welcome_->setText(tr("<h2>edo dashboard</h2><p>Open a recording (.edodb) with <b>File ▸ Open</b>, or drop one here.</p>"
                       "<p>Record one with <tt>edo record -o run.edodb -- python3 train.py</tt>,<br>"
                       "or try <tt>edo synth -o demo.edodb</tt>.</p>"));
  tabs_ = new QTabWidget(pages_);
  overview_ = new OverviewView(tabs_);
  tables_ = new TablesView(tabs_);
  detail_ = new TableDetailView(tabs_);
  kernels_ = new KernelsView(tabs_);
  ranks_ = new RanksView(tabs_);
  tuner_ = new TunerView(interactive_, tabs_);
  diff_ = new DiffView(tabs_);
  tabs_->addTab(overview_, tr("Overview"));
  tabs_->addTab(tables_, tr("Tables"));
  tabs_->addTab(detail_, tr("Table detail"));
  tabs_->addTab(kernels_, tr("Kernels"));
  tabs_->addTab(ranks_, tr("Ranks"));
  tabs_->addTab(tuner_, tr("Tuner"));
  tabs_->addTab(diff_, tr("Diff"));
  pages_->addWidget(welcome_);
  pages_->addWidget(tabs_);
  setCentralWidget(pages_);

  connect(overview_, &OverviewView::openTable, this, &MainWindow::showTable);
  connect(tables_, &TablesView::openTable, this, &MainWindow::showTable);
  connect(diff_, &DiffView::chooseOther, this, &MainWindow::chooseComparison);
  connect(diff_, &DiffView::failed, this, &MainWindow::showFailure);

  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(260);
  progress_->setRange(0, 1000);
  progress_->hide();
  status_ = new QLabel(this);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);

  buildMenus();
  resize(1280, 800);
  if (interactive_) {
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    pending_view_ = settings.value(QStringLiteral("window/view")).toString();
  }
}

MainWindow::~MainWindow() = default;

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open…"), this, &MainWindow::chooseFile);
  open->setShortcut(QKeySequence::Open);
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  QAction* compare = file->addAction(tr("&Compare with…"), this, &MainWindow::chooseComparison);
  compare->setShortcut(QKeySequence(tr("Ctrl+D")));
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
  QMenu* view = menuBar()->addMenu(tr("&View"));
  for (int i = 0; i < tabs_->count(); ++i) {
    QAction* a = view->addAction(tabs_->tabText(i), this, [this, i] { tabs_->setCurrentIndex(i); });
    a->setShortcut(QKeySequence(QStringLiteral("Ctrl+%1").arg(i + 1)));
  }
  rebuildRecentMenu();
}

QStringList MainWindow::viewNames() {
  QStringList names;
  for (const char* n : kViewNames) names << QString::fromLatin1(n);
  return names;
}

bool MainWindow::showView(const QString& name) {
  const int index = viewNames().indexOf(name);
  if (index < 0) return false;
  tabs_->setCurrentIndex(index);
  return true;
}

QString MainWindow::currentView() const { return viewNames().value(tabs_->currentIndex()); }

bool MainWindow::showTable(const QString& name) {
  if (!detail_->showTable(name)) return false;
  tabs_->setCurrentWidget(detail_);
  return true;
}

void MainWindow::openFile(const QString& path) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  // The title names the recording on show: it changes when the new file's outline arrives,
  // so a file that fails to open never takes the title from the one still shown.
  status_->setText(tr("Opening %1…").arg(absolute));
  // Lay the views out now, while the loader reads the file, not when the outline arrives.
  pages_->setCurrentWidget(tabs_);
  progress_->setValue(0);
  progress_->setRange(0, 0);  // busy until the first progress report
  progress_->show();
  loader_->open(absolute);
}

void MainWindow::compareWith(const QString& path) {
  tabs_->setCurrentWidget(diff_);
  diff_->openOther(QFileInfo(path).absoluteFilePath());
}

void MainWindow::showOutline(RecordingPtr recording) {
  pages_->setCurrentWidget(tabs_);
  if (!pending_view_.isEmpty()) {
    showView(pending_view_);
    pending_view_.clear();
  }
  progress_->setRange(0, 1000);
  status_->setText(tr("Loading statistics of %1…").arg(recording->path));
  setWindowTitle(tr("%1 — edo dashboard").arg(QFileInfo(recording->path).fileName()));
  setRecording(std::move(recording));
  Q_EMIT outlineShown();  // the view in sight has it (the others follow, one per event)
}

void MainWindow::showLoaded(RecordingPtr recording) {
  progress_->hide();
  const model::Profile& p = recording->profile;
  status_->setText(tr("%1 · %2 · %3")
                       .arg(recording->path)
                       .arg(recording->tables.size() == 1 ? tr("1 table") : tr("%1 tables").arg(recording->tables.size()))
                       .arg(p.sessions.size() == 1 ? tr("1 process") : tr("%1 processes").arg(p.sessions.size())));
  if (interactive_) rememberRecent(recording->path);
  setRecording(std::move(recording), [this] { Q_EMIT recordingLoaded(); });
}

void MainWindow::setRecording(RecordingPtr recording, std::function<void()> done) {
  if (recording_) retired_.push_back(recording_);
  recording_ = std::move(recording);
  // The view in sight first, then each other view in an event of its own, so that no single
  // step of the UI thread has to redo every view (bench/gui measures the longest step).
  update_order_ = {tabs_->currentWidget()};
  for (QWidget* v : std::initializer_list<QWidget*>{overview_, tables_, detail_, kernels_, ranks_, tuner_, diff_})
    if (v != update_order_.front()) update_order_.push_back(v);
  update_done_ = std::move(done);
  const int generation = ++update_generation_;
  updateView(generation, 0);
}

void MainWindow::updateView(int generation, size_t i) {
  if (generation != update_generation_) return;  // a newer recording took over
  if (i == update_order_.size()) {
    // Every view holds the new recording: free the old ones on another thread (hundreds of
    // thousands of memory events take milliseconds to free).
    for (RecordingPtr& old : retired_) (void)QtConcurrent::run([old = std::move(old)]() mutable { old.reset(); });
    retired_.clear();
    if (auto done = std::exchange(update_done_, {})) done();
    return;
  }
  QWidget* v = update_order_[i];
  if (v == overview_) overview_->setRecording(recording_);
  else if (v == tables_) tables_->setRecording(recording_);
  else if (v == detail_) detail_->setRecording(recording_);
  else if (v == kernels_) kernels_->setRecording(recording_);
  else if (v == ranks_) ranks_->setRecording(recording_);
  else if (v == tuner_) tuner_->setRecording(recording_);
  else if (v == diff_) diff_->setRecording(recording_);
  QTimer::singleShot(0, this, [this, generation, i] { updateView(generation, i + 1); });
}

void MainWindow::showFailure(const QString& path, const QString& reason) {
  progress_->hide();
  if (!recording_) pages_->setCurrentWidget(welcome_);
  status_->setText(reason);
  if (interactive_) {
    QMessageBox box(QMessageBox::Critical, tr("Cannot open recording"), reason, QMessageBox::Ok, this);
    box.setInformativeText(QFileInfo(path).absoluteFilePath());
    box.exec();
  }
  Q_EMIT loadFailed(reason);
}

void MainWindow::chooseFile() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open recording"), QString(), tr("edo recordings (*.edodb);;All files (*)"));
  if (!path.isEmpty()) openFile(path);
}

void MainWindow::chooseComparison() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Compare with recording"), QString(), tr("edo recordings (*.edodb);;All files (*)"));
  if (!path.isEmpty()) compareWith(path);
}

QStringList MainWindow::recentFiles() const {
  if (!interactive_) return {};
  return QSettings().value(QStringLiteral("recentFiles")).toStringList();
}

void MainWindow::rememberRecent(const QString& path) {
  QStringList recent = recentFiles();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  QSettings().setValue(QStringLiteral("recentFiles"), recent);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  const QStringList recent = recentFiles();
  for (const QString& path : recent) recent_menu_->addAction(path, this, [this, path] { openFile(path); });
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (interactive_) {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/view"), currentView());
  }
  QMainWindow::closeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (!edodb_paths(event->mimeData()).isEmpty()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const QStringList paths = edodb_paths(event->mimeData());
  if (paths.isEmpty()) return;
  event->acceptProposedAction();
  // Dropped on the Diff view: the recording to compare with; elsewhere: open it. Two files
  // at once: open the first and compare with the second.
  if (paths.size() >= 2) {
    openFile(paths[0]);
    compareWith(paths[1]);
  } else if (tabs_->currentWidget() == diff_ && recording_) {
    compareWith(paths[0]);
  } else {
    openFile(paths[0]);
  }
}

}  // namespace edo::gui
