#include "screenshot.h"

#include <QApplication>
#include <QEventLoop>
#include <QFileInfo>
#include <QImage>
#include <QPixmap>
#include <QTimer>
#include <QtGlobal>

#include "diff_view.h"
#include "edo/gui/recording/recording.h"
#include "main_window.h"
#include "table_detail_view.h"

namespace edo::gui {

namespace {

// Runs the event loop until one of the signals fires (or the limit passes: a recording that
// does not load in 10 minutes is reported, not waited for forever).
template <class Sender>
bool wait_for(MainWindow* window, Sender* sender, void (Sender::*signal)()) {
  QEventLoop loop;
  bool fired = false;
  QObject::connect(sender, signal, &loop, [&] { fired = true; loop.quit(); });
  QObject::connect(window, &MainWindow::loadFailed, &loop, [&] { loop.quit(); });
  QTimer::singleShot(600'000, &loop, &QEventLoop::quit);
  loop.exec();
  return fired;
}

}  // namespace

QString check_view_spec(const QString& view) {
  if (view == QLatin1String("overview") || view == QLatin1String("tables") || view == QLatin1String("table") ||
      view == QLatin1String("kernels") || view == QLatin1String("ranks") || view == QLatin1String("tuner"))
    return {};
  if (view.startsWith(QLatin1String("table:")) && view.size() > 6) return {};
  if (view.startsWith(QLatin1String("diff:")) && view.size() > 5) return {};
  if (view == QLatin1String("diff")) return QStringLiteral("--view diff needs the recording to compare with: --view diff:OTHER.edodb");
  return QStringLiteral("unknown view '%1' (use overview, tables, table:NAME, kernels, ranks, tuner or diff:OTHER)").arg(view);
}

int render_screenshot(const ScreenshotRequest& r, QString* error) {
  MainWindow window(/*interactive=*/false);
  QString failure;
  QObject::connect(&window, &MainWindow::loadFailed, [&](const QString& reason) { failure = reason; });
  window.resize(r.size);
  // EDO_DASHBOARD_TIMING=1 (bench/scale/run.sh): the outline is painted when it is shown, as on
  // a display, so that the first paint is timed where a user sees it, not at the final grab.
  if (qEnvironmentVariable("EDO_DASHBOARD_TIMING") == QLatin1String("1"))
    QObject::connect(&window, &MainWindow::outlineShown, &window, [&window] { (void)window.grab(); });
  window.openFile(r.file);
  if (!wait_for(&window, &window, &MainWindow::recordingLoaded)) {
    *error = failure.isEmpty() ? r.file + QStringLiteral(": did not finish loading in 10 minutes") : failure;
    return 1;
  }

  if (r.view == QLatin1String("table") || r.view.startsWith(QLatin1String("table:"))) {
    const RecordingPtr rec = window.recording();
    if (rec->tables.empty()) {
      *error = r.file + QStringLiteral(": no embedding tables recorded, so there is no table detail to show");
      return 1;
    }
    const QString name = r.view.startsWith(QLatin1String("table:")) ? r.view.mid(6) : QString::fromStdString(rec->tables.front().name);
    if (!rec->find_table(name.toStdString())) {
      QStringList names;
      for (const auto& t : rec->tables) names << QString::fromStdString(t.name);
      const int shown = 8;
      QString list = names.mid(0, shown).join(QStringLiteral(", ")) + (names.size() > shown ? QStringLiteral(", …") : QString());
      *error = QStringLiteral("%1: no table named '%2' (tables: %3)").arg(r.file, name, list);
      return 1;
    }
    window.showTable(name);
    const auto detail = window.detailView()->detail();
    if (!detail || QString::fromStdString(detail->name) != name) {
      if (!wait_for(&window, window.detailView(), &TableDetailView::detailReady)) {
        *error = failure;
        return 1;
      }
    }
  } else if (r.view.startsWith(QLatin1String("diff:"))) {
    window.compareWith(r.view.mid(5));
    if (!wait_for(&window, window.diffView(), &DiffView::diffReady)) {
      *error = failure.isEmpty() ? QStringLiteral("%1: could not be compared").arg(r.view.mid(5)) : failure;
      return 1;
    }
  } else {
    window.showView(r.view);
  }

  window.show();
  // Let layouts settle and charts lay out their axes before the grab.
  for (int i = 0; i < 3; ++i) QApplication::processEvents();
  const QImage image = window.grab().toImage();
  if (image.isNull()) {
    *error = QStringLiteral("rendering the window failed");
    return 1;
  }
  if (!image.save(r.out, "PNG")) {
    *error = QStringLiteral("%1: cannot write the PNG (does the folder exist, is it writable?)").arg(r.out);
    return 1;
  }
  return 0;
}

}  // namespace edo::gui
