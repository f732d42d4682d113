// The window and its views on the offscreen platform, as a user drives them: loading in two
// stages, the overview's chart and warnings, filtering and sorting tables, opening a table's
// detail by double-click, the coverage cursor readout, the kernels and diff views, error
// dialogs, drag and drop, and the settings remembered between runs.
#include <QAbstractItemView>
#include <QApplication>
#include <QAreaSeries>
#include <QChartView>
#include <QComboBox>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QRegularExpression>
#include <QScrollBar>
#include <QJsonArray>
#include <QJsonObject>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTest>
#include <QTimer>
#include <QUrl>
#include <QValueAxis>

#include <cmath>

#include "diff_view.h"
#include "fake_gpu_recording.h"
#include "edo/gui/diff/diff_model.h"
#include "edo/gui/format.h"
#include "edo/gui/job/kernels_model.h"
#include "edo/gui/model_roles.h"
#include "recording_torchrec_facts.h"
#include "edo/gui/job/sessions_model.h"
#include "edo/gui/tables/top_rows_model.h"
#include "edo/gui/tables/tables_model.h"
#include "kernels_view.h"
#include "main_window.h"
#include "overview_view.h"
#include "table_detail_view.h"
#include "tables_view.h"
#include "tuner_view.h"
#include "edo/gui/tune/tune_models.h"
#include "edo/gui/tune/tune_runner.h"
#include "edo/db/profile_store.h"
#include "edo/db/tune_store.h"
#include "gui_test_support.h"

using namespace edo;
using namespace edo::gui;
using namespace edo::gui::testing;

namespace {

QString host_recording() {
  return synth_recording({QStringLiteral("--tables"), QStringLiteral("5"), QStringLiteral("--rows"), QStringLiteral("30000"),
                          QStringLiteral("--lookups"), QStringLiteral("50000")});
}

bool open_and_wait(MainWindow& w, const QString& path) {
  QSignalSpy loaded(&w, &MainWindow::recordingLoaded);
  w.openFile(path);
  return loaded.wait(240'000);
}

// Opens `path` in `w` and shows its Tuner view with the recording's TorchRec facts (computed
// after the statistics); false when it does not load or holds no plan.
bool open_tuner(MainWindow& w, const QString& path) {
  w.show();
  return open_and_wait(w, path) && w.showView(QStringLiteral("tuner")) && w.tunerView()->result() &&
         QTest::qWaitFor([&] { return w.tunerView()->hasTorchRecFacts(); }, 240'000);
}

// The Tuner view's export as `format` against `edo export`'s of the same file: "" when both are
// the same bytes (*text receives them), else what differs.
QString export_differs_from_cli(TunerView* t, const QString& path, const QString& format, QByteArray* text = nullptr) {
  const QString out = temp_dir() + QStringLiteral("/exported.") + format;
  if (const QString error = t->exportPlan(format, out); !error.isEmpty()) return error;
  QFile written(out);
  if (!written.open(QIODevice::ReadOnly)) return out + QStringLiteral(": not written");
  const QByteArray bytes = written.readAll();
  if (text) *text = bytes;
  Run cli = run(edo_bin(), {QStringLiteral("export"), path, QStringLiteral("--format"), format});
  if (cli.exit_code != 0) return QStringLiteral("edo export failed: ") + QString::fromUtf8(cli.err);
  return bytes == cli.out ? QString() : QStringLiteral("the %1 exports differ:\n%2\n--- edo export:\n%3").arg(format, QString::fromUtf8(bytes), QString::fromUtf8(cli.out));
}

QString visible_text(QWidget* root) {
  QStringList parts;
  for (QLabel* l : root->findChildren<QLabel*>())
    if (l->isVisibleTo(root)) parts << l->text();
  return parts.join(QLatin1Char('\n'));
}

QChart* chart_with_title(QWidget* root, const QString& needle) {
  for (QChartView* v : root->findChildren<QChartView*>())
    if (v->chart()->title().contains(needle)) return v->chart();
  return nullptr;
}

}  // namespace

class ViewTests : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { QSettings().clear(); }

  void overviewPaintsTheOutlineFirst() {
    MainWindow w(false);
    w.show();
    std::vector<int> order;
    connect(&w, &MainWindow::outlineShown, this, [&] { order.push_back(1); });
    connect(&w, &MainWindow::recordingLoaded, this, [&] { order.push_back(2); });
    QVERIFY(open_and_wait(w, fake_recording(2, 42)));
    QCOMPARE(order, (std::vector<int>{1, 2}));
    QCOMPARE(w.currentView(), QStringLiteral("overview"));
    OverviewView* o = w.overviewView();
    const QString text = visible_text(o);
    QVERIFY2(text.contains(QStringLiteral("dropped 42 events")), qPrintable(text));
    // Each loss counter on a line of its own, with what it lost and how to avoid it.
    QVERIFY2(text.contains(QStringLiteral("batches: 42 (host lookup batches dropped")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("EDO_MAX_BUFFER_MB")), qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("2 traced processes")));
    QComboBox* picker = o->findChild<QComboBox*>();
    QVERIFY(picker && picker->isVisibleTo(o));
    QCOMPARE(picker->count(), 2);
    // The chart: one area per series, the peak marked, axes with units and explicit ranges.
    QChart* chart = chart_with_title(o, QStringLiteral("Device memory over time"));
    QVERIFY(chart);
    const StackedTimeline& tl = w.recording()->timelines.at(size_t(picker->currentIndex()));
    int areas = 0;
    for (QAbstractSeries* s : chart->series())
      if (auto* a = qobject_cast<QAreaSeries*>(s)) QCOMPARE(a->name().toStdString(), tl.series.at(size_t(areas++)));
    QCOMPARE(size_t(areas), tl.series.size());
    auto* y = qobject_cast<QValueAxis*>(chart->axes(Qt::Vertical).at(0));
    auto* x = qobject_cast<QValueAxis*>(chart->axes(Qt::Horizontal).at(0));
    QVERIFY(y->titleText().contains(QStringLiteral("MiB")) || y->titleText().contains(QStringLiteral("GiB")));
    QVERIFY(x->titleText().contains(QStringLiteral("(s)")));
    QCOMPARE(y->min(), 0.0);
    QVERIFY(y->max() * (y->titleText().contains(QStringLiteral("GiB")) ? 1024.0 * 1024 * 1024 : 1024.0 * 1024) >= double(tl.peak_bytes));
    bool peak_labelled = false;
    for (QAbstractSeries* s : chart->series()) peak_labelled |= s->name().startsWith(QStringLiteral("peak "));
    QVERIFY(peak_labelled);
    // Switching process redraws the chart for that process.
    picker->setCurrentIndex(1 - picker->currentIndex());
    QVERIFY(chart_with_title(o, QStringLiteral("process %1").arg(w.recording()->timelines.at(size_t(picker->currentIndex())).session_id)));
  }

  void overviewWarnsOfALossThatDroppedNoEvents() {
    // A process that ended without its final flush lost an unknown amount: not an event count,
    // still a warning (edo report lists it among the drops).
    MainWindow w(false);
    QVERIFY(open_and_wait(w, fake_recording_without_final_flush()));
    QCOMPARE(w.recording()->profile.dropped_events(), uint64_t{0});
    const QString text = visible_text(w.overviewView());
    QVERIFY2(text.contains(QStringLiteral("lost data")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("ended_without_final_flush: 1 session(s)")), qPrintable(text));
    QVERIFY(!text.contains(QStringLiteral("dropped 0")));
  }

  void hostRecordingShowsTheTablesBytesSaysSo() {
    MainWindow w(false);
    QVERIFY(open_and_wait(w, host_recording()));
    QVERIFY(chart_with_title(w.overviewView(), QStringLiteral("no CUDA memory timeline")));
    QVERIFY(!visible_text(w.overviewView()).contains(QStringLiteral("dropped")));
    // A recording without kernels or ranges says where they come from.
    QVERIFY(visible_text(w.kernelsView()).contains(QStringLiteral("No GPU kernels")));
  }

  void tablesFilterSortAndOpenTheDetail() {
    MainWindow w(false);
    w.resize(1280, 800);
    w.show();
    QVERIFY(open_and_wait(w, fake_recording(1, 0)));
    w.showView(QStringLiteral("tables"));
    TablesView* tv = w.tablesView();
    QTableView* table = tv->table();
    QCOMPARE(table->model()->rowCount(), int(w.recording()->tables.size()));
    tv->setFilter(QStringLiteral("emb_1"));
    QCOMPARE(table->model()->rowCount(), 1);
    QVERIFY(visible_text(tv).contains(QStringLiteral("1 of ")));
    tv->setFilter(QStringLiteral("emb_*head"));
    QCOMPARE(table->model()->rowCount(), 1);
    tv->setFilter(QString());
    table->sortByColumn(TablesModel::kLookups, Qt::AscendingOrder);
    const auto lookups_at = [&](int row) { return table->model()->index(row, TablesModel::kLookups).data(edo::gui::SortRole).toULongLong(); };
    for (int r = 1; r < table->model()->rowCount(); ++r) QVERIFY(lookups_at(r - 1) <= lookups_at(r));
    // Double-click the first row: the detail view opens on that table.
    const QModelIndex first = table->model()->index(0, TablesModel::kName);
    const QString name = first.data().toString();
    QSignalSpy ready(w.detailView(), &TableDetailView::detailReady);
    // A double-click is a press/release pair followed by a second press that Qt reads as double.
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(first).center());
    QTest::mouseDClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(first).center());
    QCOMPARE(w.currentView(), QStringLiteral("table"));
    QCOMPARE(w.detailView()->currentTable(), name);
    QVERIFY(ready.wait(240'000) || (w.detailView()->detail() && QString::fromStdString(w.detailView()->detail()->name) == name));
    QCOMPARE(QString::fromStdString(w.detailView()->detail()->name), name);
  }

  void detailChartsAndCoverageReadout() {
    MainWindow w(false);
    w.resize(1280, 800);
    w.show();
    QVERIFY(open_and_wait(w, fake_recording(1, 0)));
    QSignalSpy ready(w.detailView(), &TableDetailView::detailReady);
    QVERIFY(w.showTable(QStringLiteral("model.sparse.emb_0")));
    QVERIFY(ready.wait(240'000));
    TableDetailView* d = w.detailView();
    QChart* rank = chart_with_title(d, QStringLiteral("Rank-frequency"));
    QVERIFY(rank);
    QCOMPARE(rank->axes(Qt::Horizontal).size(), 1);
    QVERIFY(qobject_cast<QLogValueAxis*>(rank->axes(Qt::Horizontal).at(0)));
    QVERIFY(qobject_cast<QLogValueAxis*>(rank->axes(Qt::Vertical).at(0)));
    bool fit = false;
    for (QAbstractSeries* s : rank->series()) fit |= s->name().startsWith(QStringLiteral("Zipf fit"));
    QVERIFY(fit);
    QChart* lru = chart_with_title(d, QStringLiteral("LRU"));
    QVERIFY(lru);
    QCOMPARE(lru->axes(Qt::Horizontal).size(), 2);  // rows below, bytes of weights above
    bool bytes_axis = false;
    for (QAbstractAxis* a : lru->axes(Qt::Horizontal)) bytes_axis |= a->titleText().contains(QStringLiteral("of weights"));
    QVERIFY(bytes_axis);
    QVERIFY(chart_with_title(d, QStringLiteral("drift")));
    // The readout at rest names the top 1 %; the cursor reads other points of the curve.
    const QString at_rest = visible_text(d);
    QVERIFY2(at_rest.contains(QStringLiteral("The top 1.0% of rows (%1 rows) take").arg(format_count(d->detail()->rows / 100))), qPrintable(at_rest));
    QVERIFY(at_rest.contains(d->coverageReadout(0.01)));
    QChartView* coverage_view = nullptr;
    for (QChartView* v : d->findChildren<QChartView*>())
      if (v->chart()->title().startsWith(QStringLiteral("Coverage"))) coverage_view = v;
    QVERIFY(coverage_view);
    QChart* coverage = coverage_view->chart();
    const QPointF at_10pct = coverage->mapToPosition(QPointF(10.0, 50.0));
    const QPoint in_view = coverage_view->mapFromScene(coverage->mapToScene(at_10pct));
    QTest::mouseMove(coverage_view->viewport(), in_view);
    QMouseEvent move(QEvent::MouseMove, QPointF(in_view), coverage_view->viewport()->mapToGlobal(QPointF(in_view)), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(coverage_view->viewport(), &move);
    const QString hovered = visible_text(d);
    QVERIFY2(hovered.contains(QStringLiteral("The top 10.0% of rows")) || hovered.contains(QStringLiteral("The top 9.9")) ||
                 hovered.contains(QStringLiteral("The top 10.1")),
             qPrintable(hovered));
    // Another table from the picker.
    QComboBox* picker = d->findChild<QComboBox*>();
    picker->setCurrentText(QStringLiteral("model.sparse.emb_3"));
    QVERIFY(ready.wait(240'000));
    QCOMPARE(d->detail()->name, std::string("model.sparse.emb_3"));
    QVERIFY(!w.showTable(QStringLiteral("no.such.table")));
  }

  void kernelsAndRanges() {
    MainWindow w(false);
    QVERIFY(open_and_wait(w, fake_recording(1, 0)));
    KernelsView* k = w.kernelsView();
    QCOMPARE(k->kernels()->rowCount(), 5);
    QCOMPARE(k->ranges()->rowCount(), 4);
    QVERIFY(!visible_text(k).contains(QStringLiteral("No GPU kernels")));
    // Longest GPU time first, and each kernel names the tables it reads.
    QVERIFY(k->kernels()->totals().front().name.find("backward") != std::string::npos);
    QVERIFY(!k->kernels()->totals().front().tables.empty());
  }

  // `edo dashboard after.edodb --compare before.edodb`: the compared file is "before", the
  // open one "after" (README, `edo dashboard --help`), as `edo diff before.edodb after.edodb`.
  void diffWithASecondRecording() {
    MainWindow w(false);
    const QString after = host_recording();  // 5 tables, 50,000 lookups each
    QVERIFY(open_and_wait(w, after));
    const QString before = synth_recording({QStringLiteral("--tables"), QStringLiteral("6"), QStringLiteral("--rows"), QStringLiteral("30000"),
                                            QStringLiteral("--lookups"), QStringLiteral("80000")});
    QSignalSpy ready(w.diffView(), &DiffView::diffReady);
    w.compareWith(before);
    QCOMPARE(w.currentView(), QStringLiteral("diff"));
    QVERIFY(ready.count() > 0 || ready.wait(240'000));
    QCOMPARE(w.diffView()->diffBeforePath(), before);
    QCOMPARE(w.diffView()->diffAfterPath(), after);
    const RecordingDiff* diff = w.diffView()->model()->diff();
    QVERIFY(diff);
    QCOMPARE(diff->tables.size(), size_t{6});
    // The sixth table is only in the file compared with: before.
    QCOMPARE(int(diff->tables.back().status), int(TableDiff::Status::kOnlyBefore));
    // The signs of `edo diff before after`: lookups went from 80,000 to 50,000.
    size_t lookups_metric = 0;
    while (lookups_metric < diff_metrics().size() && std::string(diff_metrics()[lookups_metric].key) != "lookups") ++lookups_metric;
    QVERIFY(lookups_metric < diff_metrics().size());
    const TableDiff& first = diff->tables.front();
    QCOMPARE(first.before[lookups_metric], 80000.0);
    QCOMPARE(first.after[lookups_metric], 50000.0);
    const QString header = visible_text(w.diffView());
    QVERIFY2(header.contains(QStringLiteral("<b>before</b> %1").arg(before)) && header.contains(QStringLiteral("<b>after</b> %1").arg(after)),
             qPrintable(header));
    QVERIFY(chart_with_title(w.diffView(), QStringLiteral("before and after")));
    // Neither recording has a training loss: no loss chart is shown.
    for (QChartView* v : w.diffView()->findChildren<QChartView*>())
      if (v->chart()->title().contains(QStringLiteral("Training loss"))) QVERIFY(v->isHidden());
  }

  // Issue 29: a plan's trial run beside its baseline. Both loss curves are drawn over the steps,
  // and the trial's first non-finite loss is marked and named.
  void diffDrawsBothLossCurves() {
    const auto write = [](const QString& name, uint64_t nan_at, uint64_t seed) {
      const QString path = temp_dir() + QLatin1Char('/') + name;
      fake::FakeGpuRecordingOptions o;
      o.tables = 2;
      o.rows = 5'000;
      o.lookups = 10'000;
      o.memory_events = 500;
      o.steps = 60;
      o.loss_scale = 1.0;
      o.loss_nan_at = nan_at;
      o.seed = seed;
      fake::write_fake_gpu_recording(path.toStdString(), o);
      return path;
    };
    const QString trial = write(QStringLiteral("trial.edodb"), 40, 5), base = write(QStringLiteral("base.edodb"), 0, 6);
    MainWindow w(false);
    QVERIFY(open_and_wait(w, trial));
    QSignalSpy ready(w.diffView(), &DiffView::diffReady);
    w.compareWith(base);
    QVERIFY(ready.count() > 0 || ready.wait(240'000));
    const RecordingDiff* diff = w.diffView()->model()->diff();
    QVERIFY(diff);
    QCOMPARE(diff->loss_before.count, size_t{60});
    QCOMPARE(diff->loss_after.count, size_t{60});
    QCOMPARE(diff->loss_after.step.size(), size_t{39});  // steps 1..39 finite, each its own bucket
    QChart* chart = chart_with_title(w.diffView(), QStringLiteral("Training loss"));
    QVERIFY(chart);
    QStringList names;
    for (QAbstractSeries* s : chart->series()) {
      auto* line = qobject_cast<QLineSeries*>(s);
      QVERIFY(line);
      names << line->name();
      if (line->name() == QStringLiteral("before")) QCOMPARE(line->count(), 60);
    }
    QCOMPARE(names, (QStringList{QStringLiteral("before"), QStringLiteral("after (not finite from step 40)"),
                                 QStringLiteral("after: first non-finite loss")}));
    for (QChartView* v : w.diffView()->findChildren<QChartView*>())
      if (v->chart() == chart) QVERIFY(!v->isHidden());
  }

  // A file that fails to open leaves the window as it was: title and views of the recording
  // still shown.
  void failedOpenKeepsTheTitle() {
    MainWindow w(false);
    const QString path = host_recording();
    QVERIFY(open_and_wait(w, path));
    const QString title = w.windowTitle();
    QVERIFY2(title.contains(QFileInfo(path).fileName()), qPrintable(title));
    QSignalSpy failed(&w, &MainWindow::loadFailed);
    w.openFile(temp_dir() + QStringLiteral("/broken-open.edodb"));
    QVERIFY(failed.count() > 0 || failed.wait(240'000));
    QCOMPARE(w.windowTitle(), title);
    QCOMPARE(w.recording()->path, path);
  }

  // Tables: another file starts scrolled to the left (the name column in sight).
  void tablesViewScrollsBackForAnotherFile() {
    MainWindow w(false);
    w.resize(900, 600);  // narrower than the columns: a horizontal scroll bar
    w.show();
    QVERIFY(open_and_wait(w, fake_recording(1, 0)));
    w.showView(QStringLiteral("tables"));
    QTableView* table = w.tablesView()->table();
    QScrollBar* bar = table->horizontalScrollBar();
    QTRY_VERIFY_WITH_TIMEOUT(bar->maximum() > 0, 240'000);
    bar->setValue(bar->maximum());
    QCOMPARE(bar->value(), bar->maximum());
    QVERIFY(open_and_wait(w, host_recording()));
    QCOMPARE(bar->value(), 0);
    QVERIFY(!table->isColumnHidden(TablesModel::kName));
    QVERIFY(table->columnViewportPosition(TablesModel::kName) >= 0);
  }

  // The most-read rows of a table with 7-digit row ids: every header fits its column.
  void topRowsHeadersFitLongRowIds() {
    MainWindow w(false);
    w.resize(1280, 800);
    w.show();
    const QString path = synth_recording({QStringLiteral("--tables"), QStringLiteral("1"), QStringLiteral("--rows"), QStringLiteral("9000000"),
                                          QStringLiteral("--lookups"), QStringLiteral("20000")});
    QVERIFY(open_and_wait(w, path));
    QSignalSpy ready(w.detailView(), &TableDetailView::detailReady);
    QVERIFY(w.showTable(QString::fromStdString(w.recording()->tables.front().name)));
    QVERIFY(ready.count() > 0 || ready.wait(240'000));
    QTableView* rows = w.detailView()->topRows();
    QVERIFY(rows->model()->rowCount() > 0);
    int longest_id = 0;
    for (int r = 0; r < rows->model()->rowCount(); ++r)
      longest_id = std::max(longest_id, int(rows->model()->index(r, TopRowsModel::kRow).data().toString().size()));
    QVERIFY2(longest_id >= 7, qPrintable(QString::number(longest_id)));
    QHeaderView* header = rows->horizontalHeader();
    QTRY_VERIFY_WITH_TIMEOUT(header->sectionSize(TopRowsModel::kCumulative) >= header->sectionSizeHint(TopRowsModel::kCumulative), 240'000);
    for (int c = 0; c < TopRowsModel::kColumnCount; ++c) QVERIFY(header->sectionSize(c) >= header->sectionSizeHint(c));
  }

  // Processes: the overview names what the processes are (no ranks where there are none),
  // and the process table gives each one's role.
  void overviewNamesTheProcessesRoles() {
    MainWindow w(false);
    w.show();
    QVERIFY(open_and_wait(w, fake_recording(2, 0)));  // two ranks
    const QString text = visible_text(w.overviewView());
    const QString roles = describe_roles(model::job_view(w.recording()->profile));
    QVERIFY2(roles.contains(QStringLiteral("rank")) && !roles.contains(QStringLiteral("worker")), qPrintable(roles));
    QVERIFY2(text.contains(QStringLiteral("2 traced processes (%1)").arg(roles)), qPrintable(text));
    // A job with forked workers and no ranks: no "ranks" in sight.
    model::Profile workers;
    for (int i = 0; i < 3; ++i) {
      model::Session s;
      s.id = i + 1;
      s.pid = 100 + i;
      s.parent_pid = i == 0 ? 1 : 100;
      s.command = "python3 train.py";
      s.exit_code = i == 0 ? std::optional<int>(0) : std::nullopt;
      workers.sessions.push_back(s);
    }
    OverviewView overview;
    overview.setRecording(make_recording(QStringLiteral("/tmp/workers.edodb"), workers));
    const QString workers_text = visible_text(&overview);
    QVERIFY2(workers_text.contains(QStringLiteral("3 traced processes (the root, 2 forked workers)")), qPrintable(workers_text));
    QVERIFY(!workers_text.contains(QStringLiteral("ranks")));
    QTableView* sessions = nullptr;
    for (QTableView* t : w.overviewView()->findChildren<QTableView*>())
      if (qobject_cast<SessionsModel*>(t->model())) sessions = t;
    QVERIFY(sessions && sessions->isVisibleTo(w.overviewView()));
    QCOMPARE(sessions->model()->headerData(SessionsModel::kRole, Qt::Horizontal).toString(), QStringLiteral("Role"));
  }

  // Issue 30 §10: a recording whose edo record died before its final save says "incomplete" in
  // the Overview's header, with the time it holds, not "exit unknown" and 0 s.
  void overviewSaysARecordingWasCutShort() {
    model::Profile p;
    model::Session s;
    s.id = 1;
    s.pid = 100;
    s.parent_pid = 1;
    s.command = "python3 train.py";
    p.sessions.push_back(s);
    p.metadata["recording.state"] = "in_progress";
    p.metadata["recording.writer_pid"] = "1073741800";  // above any pid_max: no such process
    p.metadata["recording.started_unix_ns"] = "1000000000000";
    p.metadata["recording.saved_unix_ns"] = "1012500000000";
    OverviewView overview;
    overview.setRecording(make_recording(QStringLiteral("/tmp/cut.edodb"), p));
    const QString text = visible_text(&overview);
    QVERIFY2(text.contains(QStringLiteral("incomplete: the recording was cut short")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("12.5 s of the job saved")), qPrintable(text));
    QVERIFY2(!text.contains(QStringLiteral("exit unknown")), qPrintable(text));
  }

  // Issue 30 §5: a recording whose saves failed (a full disk) says so in the header with why and
  // how much it holds of what edo record received, as `edo report` does.
  void overviewSaysWhyAndHowMuchARecordingLost() {
    model::Profile p;
    model::Session s;
    s.id = 1;
    s.pid = 100;
    s.parent_pid = 1;
    s.command = "python3 train.py";
    p.sessions.push_back(s);
    p.metadata["recording.state"] = "in_progress";
    p.metadata["recording.writer_pid"] = "1073741800";
    p.metadata["recording.started_unix_ns"] = "1000000000000";
    p.metadata["recording.saved_unix_ns"] = "1001000000000";
    p.metadata["recording.saved_lookups"] = "1200";
    p.metadata["recording.save_error"] = "the disk is full (database or disk is full); free some space";
    p.metadata["recording.received_unix_ns"] = "1004200000000";
    p.metadata["recording.received_lookups"] = "70000";
    p.metadata["recording.final_save"] = "failed";
    OverviewView overview;
    overview.setRecording(make_recording(QStringLiteral("/tmp/full.edodb"), p));
    const QString text = visible_text(&overview).simplified();
    QVERIFY2(text.contains(QStringLiteral("incomplete: edo record could not save the whole recording (the disk is full")),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("the file holds 1.0 s of the job's 4.2 s and 1200 of the 70000 lookups edo record "
                                          "received")),
             qPrintable(text));
  }

  // Issue 36 point 5: the TorchRec export writes `edo export --format torchrec`'s file from the
  // facts the loader computed with the statistics (the recording is not read again): the hook's
  // config name and features, and every table's cache statistics, held out for one process
  // (replayed from the ordered samples the dashboard's load leaves out) or recorded for two.
  void torchrecExportEqualsTheCliFromFactsComputedAtLoad() {
    for (int processes : {1, 2}) {
      const QString path = torchrec_recording(processes);
      MainWindow w(false);
      QVERIFY(open_tuner(w, path));
      QByteArray text;
      const QString differs = export_differs_from_cli(w.tunerView(), path, QStringLiteral("torchrec"), &text);
      QVERIFY2(differs.isEmpty(), qPrintable(differs));
      // What makes the comparison worth it: the note's facts and a curve per table.
      QVERIFY2(text.contains("\"t0\": ParameterConstraints(") && text.contains("feature_names=[\"f0\", \"f1\"]"), text.constData());
      const QRegularExpression stats(QStringLiteral("^    \"[^\"]+\": EdoCacheStatistics\\(.*, (True|False), [0-9.e+-]+\\),$"),
                                     QRegularExpression::MultilineOption);
      int tables = 0;
      for (auto it = stats.globalMatch(QString::fromUtf8(text)); it.hasNext(); ++tables)
        QCOMPARE(it.next().captured(1), processes == 1 ? QStringLiteral("True") : QStringLiteral("False"));
      QCOMPARE(tables, 3);
    }
  }

  // The facts come after the statistics: until they are in, TorchRec's export says so (the
  // other formats need no facts), and then writes the file.
  void torchrecExportWaitsForTheFacts() {
    const QString path = torchrec_recording(1);
    db::ProfileStore store(path.toStdString(), db::ProfileStore::Mode::kReadOnly);
    auto rec = make_recording(path, load_profile_for_dashboard(store), {}, db::load_latest_tune_result(store));
    TunerView t(false);
    t.setRecording(rec);
    QVERIFY(t.result() && !t.hasTorchRecFacts());
    const QString early = temp_dir() + QStringLiteral("/early.py");
    QVERIFY(t.exportPlan(QStringLiteral("torchrec"), early).contains(QStringLiteral("still being computed")));
    QVERIFY(!QFileInfo::exists(early));
    QCOMPARE(t.exportPlan(QStringLiteral("json"), temp_dir() + QStringLiteral("/early.json")), QString());
    fill_torchrec_facts(*rec, &store);
    t.refreshExports();
    QVERIFY(t.hasTorchRecFacts());
    QCOMPARE(t.exportPlan(QStringLiteral("torchrec"), early), QString());
    // Facts that could not be computed: the export says why, once.
    auto broken = make_recording(path, load_profile_for_dashboard(store), {}, db::load_latest_tune_result(store));
    broken->torchrec_facts->fail("statistics of table 'synth.table_1' do not decode");
    t.setRecording(broken);
    QCOMPARE(t.exportPlan(QStringLiteral("torchrec"), early),
             path + QStringLiteral(": cannot compute the TorchRec facts (statistics of table 'synth.table_1' do not decode)"));
  }

  void tunerShowsThePlanReplansAndExports() {
    QJsonObject plan_json;
    const QString path = tuned_recording(&plan_json);
    MainWindow w(false);
    QVERIFY(open_tuner(w, path));
    TunerView* t = w.tunerView();
    QCOMPARE(t->plan()->rowCount(), int(plan_json[QStringLiteral("tables")].toArray().size()));
    QVERIFY(chart_with_title(t, QStringLiteral("device memory vs step time")));
    QVERIFY(visible_text(t).contains(QStringLiteral("measured on: CPU")));
    // The notes speak of the view's fields, not of `edo tune`'s flags.
    QVERIFY2(visible_text(t).contains(QStringLiteral("Max error")) && !visible_text(t).contains(QStringLiteral("--")),
             qPrintable(visible_text(t)));
    // Exports: the same documents `edo export` writes.
    for (const QString& format : {QStringLiteral("json"), QStringLiteral("yaml"), QStringLiteral("torchrec")}) {
      const QString differs = export_differs_from_cli(t, path, format);
      QVERIFY2(differs.isEmpty(), qPrintable(differs));
    }
    QVERIFY(t->exportPlan(QStringLiteral("json"), temp_dir() + QStringLiteral("/no/such/dir/plan.json")).contains(QStringLiteral("cannot write")));
    // Replan for a generous budget: every table back to as fast as it gets; for 1 KiB: no plan.
    t->setBudget(QStringLiteral("1GiB"));
    QVERIFY(t->replan());
    QCOMPARE(t->result()->budget_bytes, uint64_t{1} << 30);
    QVERIFY(t->result()->feasible);
    t->setBudget(QStringLiteral("1KiB"));
    QVERIFY(t->replan());
    QVERIFY(!t->result()->feasible);
    QVERIFY(visible_text(t).contains(QStringLiteral("plan: none fits 1.00 KiB")));
    QVERIFY(!t->exportPlan(QStringLiteral("json"), temp_dir() + QStringLiteral("/x.json")).isEmpty());
    // The error limit: a number, "none", or empty for the tuner library's own default.
    t->setBudget(QStringLiteral("1GiB"));
    t->setMaxError(QStringLiteral("0.001"));
    QVERIFY(t->replan());
    QCOMPARE(t->result()->max_error, 0.001);
    for (const auto& ch : t->result()->choices)
      if (ch.candidate >= 0) QVERIFY(t->result()->candidates[size_t(ch.candidate)].error <= 0.001);
    t->setMaxError(QStringLiteral("None"));
    QVERIFY(t->replan());
    QVERIFY(std::isinf(t->result()->max_error));
    t->setMaxError(QString());
    QCOMPARE(t->options().max_error, tuner::TuneOptions{}.max_error);
    t->setMaxError(QStringLiteral("small"));
    QVERIFY(!t->replan());
    QVERIFY(visible_text(t).contains(QStringLiteral("max error 'small' is not a number")));
    t->setMaxError(QString());
    // A budget that does not parse is refused in one line.
    t->setBudget(QStringLiteral("lots"));
    QVERIFY(!t->replan());
    QVERIFY(!t->runTune());
    QVERIFY(visible_text(t).contains(QStringLiteral("lots")));
  }

  void tunerRunsFromTheView() {
    const QString path = temp_dir() + QStringLiteral("/view-tune.edodb");
    QVERIFY(run(edo_bin(), {QStringLiteral("synth"), QStringLiteral("-o"), path, QStringLiteral("--tables"), QStringLiteral("2"),
                            QStringLiteral("--rows"), QStringLiteral("3000"), QStringLiteral("--lookups"), QStringLiteral("10000")})
                .exit_code == 0);
    MainWindow w(false);
    QVERIFY(open_and_wait(w, path));
    TunerView* t = w.tunerView();
    QVERIFY(!t->result());
    QVERIFY(visible_text(t).contains(QStringLiteral("No tune run")));
    t->setBudget(QStringLiteral("1MiB"));
    t->setBackend(QStringLiteral("cpu"));
    QSignalSpy shown(t, &TunerView::resultShown);
    QVERIFY(t->runTune());
    QVERIFY(t->runner()->busy());
    QVERIFY(shown.wait(240'000));
    QVERIFY(t->result());
    QCOMPARE(t->result()->backend, std::string("cpu"));
    QCOMPARE(t->plan()->rowCount(), 2);
    // Stored: reopening the file shows the same run.
    MainWindow again(false);
    QVERIFY(open_and_wait(again, path));
    QCOMPARE(again.tunerView()->result()->run_id, t->result()->run_id);

    // Another recording opened while a run goes on: the run stops, is kept in its own file,
    // and its result is not shown over the new recording.
    const int64_t first_run = t->result()->run_id;
    const QString other = temp_dir() + QStringLiteral("/view-tune-other.edodb");
    QVERIFY(run(edo_bin(), {QStringLiteral("synth"), QStringLiteral("-o"), other, QStringLiteral("--tables"), QStringLiteral("1"),
                            QStringLiteral("--rows"), QStringLiteral("100"), QStringLiteral("--lookups"), QStringLiteral("1000")})
                .exit_code == 0);
    QSignalSpy stopped(t->runner(), &TuneRunner::finished);
    QVERIFY(t->runTune());
    QVERIFY(open_and_wait(w, other));
    QVERIFY(stopped.count() > 0 || stopped.wait(240'000));
    QVERIFY(!t->result());
    QVERIFY(visible_text(t).contains(QStringLiteral("stopped when another recording was opened")));
    db::ProfileStore store(path.toStdString(), db::ProfileStore::Mode::kReadOnly);
    const auto kept = db::load_latest_tune_result(store);
    QVERIFY(kept.has_value());
    QVERIFY(kept->run_id != first_run);
    QCOMPARE(kept->stop_reason, std::string("cancelled"));
  }

  // A GPU job's recording tuned here (no GPU): the view says its times are modelled for the
  // recording's GPU (docs/tuning.md "Device model") and offers the stored devices as targets.
  void tunerSaysAGpuRecordingsTimesAreModelled() {
    const QString path = temp_dir() + QStringLiteral("/view-tune-gpu.edodb");
    QVERIFY(run(edo_bin(), {QStringLiteral("synth"), QStringLiteral("-o"), path, QStringLiteral("--tables"), QStringLiteral("2"),
                            QStringLiteral("--rows"), QStringLiteral("3000"), QStringLiteral("--lookups"), QStringLiteral("10000"),
                            QStringLiteral("--gpu"), QStringLiteral("NVIDIA H200")})
                .exit_code == 0);
    MainWindow w(false);
    QVERIFY(open_and_wait(w, path));
    TunerView* t = w.tunerView();
    bool offered = false;
    for (QComboBox* c : t->findChildren<QComboBox*>()) offered = offered || (c->isEditable() && c->findText(QStringLiteral("NVIDIA H200")) >= 0);
    QVERIFY(offered);
    t->setBudget(QStringLiteral("1MiB"));
    QSignalSpy shown(t, &TunerView::resultShown);
    QVERIFY(t->runTune());
    QVERIFY(shown.wait(240'000));
    QVERIFY(t->result());
    QCOMPARE(t->result()->timing_kind, std::string("modelled"));
    QVERIFY2(visible_text(t).contains(QStringLiteral("times modelled for NVIDIA H200")), qPrintable(visible_text(t)));
    QVERIFY(!visible_text(t).contains(QStringLiteral("measured on: CPU")));
  }

  // A bad file: a dialog with the one-line reason; the window stays usable.
  void badFileOpensAnErrorDialog() {
    MainWindow w(true);
    w.show();
    const QString missing = temp_dir() + QStringLiteral("/not-there.edodb");
    QString dialog_text;
    QTimer poll;
    connect(&poll, &QTimer::timeout, this, [&] {
      if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
        dialog_text = box->text();
        box->accept();
      }
    });
    poll.start(20);
    QSignalSpy failed(&w, &MainWindow::loadFailed);
    w.openFile(missing);
    QVERIFY(failed.count() > 0 || failed.wait(240'000));
    QVERIFY2(dialog_text.contains(QStringLiteral("no such file")) && dialog_text.contains(missing), qPrintable(dialog_text));
    QVERIFY(!dialog_text.contains(QLatin1Char('\n')));
    // Still usable: the next file opens.
    QVERIFY(open_and_wait(w, host_recording()));
  }

  void dropOpensAndComparesFiles() {
    MainWindow w(false);
    w.show();
    auto drop = [&](const QStringList& paths) {
      auto* mime = new QMimeData();
      QList<QUrl> urls;
      for (const QString& p : paths) urls << QUrl::fromLocalFile(p);
      mime->setUrls(urls);
      QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
      QApplication::sendEvent(&w, &enter);
      QVERIFY(enter.isAccepted());
      QDropEvent dropped(QPointF(10, 10), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
      QApplication::sendEvent(&w, &dropped);
      delete mime;
    };
    QSignalSpy loaded(&w, &MainWindow::recordingLoaded);
    drop({host_recording()});
    QVERIFY(loaded.count() > 0 || loaded.wait(240'000));
    QCOMPARE(w.recording()->path, host_recording());
    // Two files: the first opens, the second is compared with it. The comparison may first be
    // made against the recording still open (the second file can load before the first):
    // wait for the diff of the dropped pair itself, not for the first diff signal.
    drop({fake_recording(1, 0), host_recording()});
    QTRY_VERIFY_WITH_TIMEOUT(w.diffView()->model()->diff() && w.diffView()->diffAfterPath() == fake_recording(1, 0) &&
                                 w.diffView()->diffBeforePath() == host_recording(),
                             240'000);
    QCOMPARE(w.recording()->path, fake_recording(1, 0));
    QCOMPARE(w.diffView()->otherPath(), host_recording());
  }

  void settingsAreRemembered() {
    QSettings().clear();
    const QString path = host_recording();
    {
      MainWindow w(true);
      w.show();
      QVERIFY(open_and_wait(w, path));
      QVERIFY(w.showView(QStringLiteral("kernels")));
      w.resize(1000, 700);
      w.close();
      QCOMPARE(w.recentFiles(), QStringList{path});
    }
    MainWindow again(true);
    QCOMPARE(again.size(), QSize(1000, 700));
    QVERIFY(open_and_wait(again, path));
    QCOMPARE(again.currentView(), QStringLiteral("kernels"));
    QVERIFY(!MainWindow(false).recentFiles().size());  // the headless mode neither reads nor writes them
  }
};

EDO_GUI_TEST_MAIN(ViewTests, QApplication)
#include "gui_view_test.moc"
