// The dashboard shows the numbers `edo report --json` and `edo diff --json` print for the
// same file, value for value: on `edo synth` recordings (exact and sketched counts), a fake
// GPU recording (two processes, memory timeline, kernels, NVTX ranges, ties, dropped events)
// and examples/dlrm_like.py recorded under `edo record` here.
#include <QGuiApplication>
#include <QJsonArray>
#include <QSignalSpy>
#include <QTest>

#include <cmath>
#include <map>

#include "edo/gui/diff/diff_model.h"
#include "edo/gui/job/kernels_model.h"
#include "edo/gui/model_roles.h"
#include "edo/gui/recording/recording_loader.h"
#include "edo/gui/tables/table_detail.h"
#include "edo/gui/tables/tables_model.h"
#include "edo/gui/tables/top_tables_model.h"
#include "edo/gui/tune/tune_models.h"
#include "gui_test_support.h"

using namespace edo;
using namespace edo::gui;
using namespace edo::gui::testing;

namespace {

bool same(double a, double b) { return a == b || std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b)); }

#define EXPECT_SAME(actual, expected, what)                                                              \
  QVERIFY2(same(double(actual), double(expected)),                                                      \
           qPrintable(QStringLiteral("%1: dashboard %2, edo report %3").arg(what).arg(double(actual), 0, 'g', 17).arg(double(expected), 0, 'g', 17)))

RecordingPtr open_like_the_app(const QString& path) {
  RecordingLoader loader;
  QSignalSpy loaded(&loader, &RecordingLoader::loaded);
  QSignalSpy failed(&loader, &RecordingLoader::failed);
  loader.open(path);
  if (!loaded.wait(240'000)) qFatal("%s did not load: %s", qPrintable(path), failed.isEmpty() ? "timeout" : qPrintable(failed.at(0).at(1).toString()));
  return loaded.at(0).at(0).value<RecordingPtr>();
}

void compare_with_report(const QString& path) {
  const QJsonObject j = report_json(path, 100);
  RecordingPtr rec = open_like_the_app(path);
  const model::Profile& p = rec->profile;

  // Sessions.
  const QJsonArray sessions = j[QStringLiteral("sessions")].toArray();
  QCOMPARE(size_t(sessions.size()), p.sessions.size());
  for (int i = 0; i < sessions.size(); ++i) {
    const QJsonObject s = sessions[i].toObject();
    const model::Session& m = p.sessions[size_t(i)];
    QCOMPARE(s[QStringLiteral("command")].toString().toStdString(), m.command);
    QCOMPARE(s[QStringLiteral("pid")].toInteger(), m.pid);
    QCOMPARE(s[QStringLiteral("steps")].toInteger(), qint64(m.steps));
    QCOMPARE(s[QStringLiteral("dropped_events")].toInteger(), qint64(m.dropped_events));
    EXPECT_SAME(m.duration_ns / 1e9, s[QStringLiteral("duration_s")].toDouble(), "duration");
    QCOMPARE(s[QStringLiteral("exit_code")].isNull(), !m.exit_code.has_value());
  }
  QCOMPARE(j[QStringLiteral("dropped_events")].toInteger(), qint64(p.dropped_events()));

  // Memory: the overview's peak, table bytes and the timeline's peak.
  const QJsonObject mem = j[QStringLiteral("memory")].toObject();
  QCOMPARE(mem[QStringLiteral("peak_bytes")].toInteger(), p.peak_bytes());
  QCOMPARE(mem[QStringLiteral("peak_bytes")].toInteger(), rec->peak_bytes);  // what the overview shows
  QCOMPARE(mem[QStringLiteral("table_bytes")].toInteger(), qint64(rec->table_memory.total_bytes()));
  QCOMPARE(mem[QStringLiteral("table_bytes")].toInteger(), qint64(p.table_bytes()));
  QCOMPARE(mem[QStringLiteral("weight_bytes")].toInteger(), qint64(p.table_memory().weight_bytes));
  QCOMPARE(mem[QStringLiteral("optimizer_bytes")].toInteger(), qint64(p.table_memory().optimizer_bytes));
  QCOMPARE(mem[QStringLiteral("grad_bytes")].toInteger(), qint64(p.table_memory().grad_bytes));
  QCOMPARE(mem[QStringLiteral("timeline_events")].toInteger(), qint64(p.memory_events.size()));
  if (!rec->timelines.empty()) {
    int64_t peak = 0;
    size_t events = 0;
    for (const auto& tl : rec->timelines) peak = std::max(peak, tl.peak_bytes), events += tl.events;
    QCOMPARE(peak, mem[QStringLiteral("peak_bytes")].toInteger());
    QCOMPARE(qint64(events), mem[QStringLiteral("timeline_events")].toInteger());
  }

  // Tables: the Tables view's model, cell by cell (sort keys are the numbers behind the text).
  TablesModel model;
  model.setRecording(rec);
  const QJsonArray tables = j[QStringLiteral("tables")].toArray();
  QCOMPARE(model.rowCount(), int(tables.size()));
  uint64_t lookups = 0;
  for (int i = 0; i < tables.size(); ++i) {
    const QJsonObject t = tables[i].toObject();
    const QString name = t[QStringLiteral("name")].toString();
    auto cell = [&](int column) { return model.index(i, column).data(SortRole); };
    QCOMPARE(cell(TablesModel::kName).toString(), name);
    const model::TableView* v = model.table(i);
    QCOMPARE(qint64(v->rows), t[QStringLiteral("rows")].toInteger());
    QCOMPARE(qint64(v->dim), t[QStringLiteral("dim")].toInteger());
    QCOMPARE(cell(TablesModel::kDtype).toString(), t[QStringLiteral("dtype")].toString());
    QCOMPARE(cell(TablesModel::kDevice).toString(), t[QStringLiteral("device")].toString());
    const bool shared = !t[QStringLiteral("shares_weights_of")].isNull();
    QCOMPARE(cell(TablesModel::kBytes).toLongLong(), t[QStringLiteral("total_bytes")].toInteger());
    QCOMPARE(cell(TablesModel::kWeights).toLongLong(), t[QStringLiteral("weight_bytes")].toInteger());
    QCOMPARE(cell(TablesModel::kOptimizer).toLongLong(), t[QStringLiteral("optimizer_bytes")].toInteger());
    QCOMPARE(cell(TablesModel::kGrads).toLongLong(), t[QStringLiteral("grad_bytes")].toInteger());
    QCOMPARE(cell(TablesModel::kLookups).toLongLong(), t[QStringLiteral("lookups")].toInteger());
    QCOMPARE(cell(TablesModel::kUnique).toLongLong(), t[QStringLiteral("unique_rows")].toInteger());
    const QJsonObject cov = t[QStringLiteral("coverage")].toObject();
    EXPECT_SAME(cell(TablesModel::kTop01).toDouble(), cov[QStringLiteral("top_0.1pct")].toDouble(), name + " top 0.1%");
    EXPECT_SAME(cell(TablesModel::kTop1).toDouble(), cov[QStringLiteral("top_1pct")].toDouble(), name + " top 1%");
    EXPECT_SAME(cell(TablesModel::kTop10).toDouble(), cov[QStringLiteral("top_10pct")].toDouble(), name + " top 10%");
    if (t[QStringLiteral("zipf_alpha")].isNull()) QCOMPARE(cell(TablesModel::kZipf).toDouble(), -1.0);
    else EXPECT_SAME(cell(TablesModel::kZipf).toDouble(), t[QStringLiteral("zipf_alpha")].toDouble(), name + " zipf");
    const QJsonObject lru = t[QStringLiteral("lru_hit_rate_at")].toObject();
    EXPECT_SAME(cell(TablesModel::kLru1).toDouble(), lru[QStringLiteral("1pct")].toDouble(), name + " LRU 1%");
    EXPECT_SAME(cell(TablesModel::kLru10).toDouble(), lru[QStringLiteral("10pct")].toDouble(), name + " LRU 10%");
    EXPECT_SAME(cell(TablesModel::kLru50).toDouble(), lru[QStringLiteral("50pct")].toDouble(), name + " LRU 50%");
    QStringList tied;
    for (const auto& n : t[QStringLiteral("tied_with")].toArray()) tied << n.toString();
    QCOMPARE(cell(TablesModel::kTies).toString(), tied.join(QStringLiteral(", ")));
    QCOMPARE(QString::fromStdString(v->shares_weights_of), shared ? t[QStringLiteral("shares_weights_of")].toString() : QString());
    QCOMPARE(v->sessions, t[QStringLiteral("sessions")].toInt());
    QCOMPARE(v->summary.mode == stats::CountMode::kExact, t[QStringLiteral("counts")].toString() == QLatin1String("exact"));
    lookups += uint64_t(t[QStringLiteral("lookups")].toInteger());

    // The detail view's data: its LRU curve, top rows and headline coverage.
    TableDetail d = build_table_detail(*v, 100);
    const QJsonArray curve = t[QStringLiteral("lru_hit_rate")].toArray();
    QCOMPARE(size_t(curve.size()), d.lru.size());
    for (int k = 0; k < curve.size(); ++k) {
      QCOMPARE(std::llround(d.lru[size_t(k)].x), curve[k].toArray()[0].toInteger());
      EXPECT_SAME(d.lru[size_t(k)].y, curve[k].toArray()[1].toDouble(), name + " LRU curve");
    }
    const QJsonArray top = t[QStringLiteral("top_rows")].toArray();
    QCOMPARE(size_t(top.size()), d.top_rows.size());
    for (int k = 0; k < top.size(); ++k) {
      QCOMPARE(qint64(d.top_rows[size_t(k)].first), top[k].toArray()[0].toInteger());
      QCOMPARE(qint64(d.top_rows[size_t(k)].second), top[k].toArray()[1].toInteger());
    }
    if (d.lookups > 0) {
      EXPECT_SAME(coverage_at(d, 0.001), cov[QStringLiteral("top_0.1pct")].toDouble(), name + " coverage readout at 0.1%");
      EXPECT_SAME(coverage_at(d, 0.01), cov[QStringLiteral("top_1pct")].toDouble(), name + " coverage readout at 1%");
      EXPECT_SAME(coverage_at(d, 0.1), cov[QStringLiteral("top_10pct")].toDouble(), name + " coverage readout at 10%");
    }
    if (!t[QStringLiteral("zipf_alpha")].isNull()) EXPECT_SAME(d.zipf_alpha, t[QStringLiteral("zipf_alpha")].toDouble(), name);
  }
  QCOMPARE(rec->total_lookups(), lookups);

  // Overview lists: the biggest share of lookups belongs to the most-read table.
  TopTablesModel by_lookups(TopTablesModel::Measure::kLookups, 1000);
  by_lookups.setRecording(rec);
  uint64_t listed = 0;
  for (const auto& e : by_lookups.entries()) listed += e.value;
  QCOMPARE(listed, lookups);

  // Kernels and ranges: summed by name over processes.
  std::map<QString, std::pair<qint64, qint64>> kernels, ranges;
  for (const auto& k : j[QStringLiteral("kernels")].toArray()) {
    auto& e = kernels[k.toObject()[QStringLiteral("name")].toString()];
    e.first += k.toObject()[QStringLiteral("launches")].toInteger();
    e.second += k.toObject()[QStringLiteral("total_ns")].toInteger();
  }
  for (const auto& r : j[QStringLiteral("ranges")].toArray()) {
    auto& e = ranges[r.toObject()[QStringLiteral("name")].toString()];
    e.first += r.toObject()[QStringLiteral("count")].toInteger();
    e.second += r.toObject()[QStringLiteral("lookups")].toInteger();
  }
  KernelsModel km;
  km.setRecording(rec);
  QCOMPARE(size_t(km.rowCount()), kernels.size());
  for (const auto& k : km.totals()) {
    const auto& e = kernels[QString::fromStdString(k.name)];
    QCOMPARE(qint64(k.launches), e.first);
    QCOMPARE(qint64(k.total_ns), e.second);
  }
  RangesModel rm;
  rm.setRecording(rec);
  QCOMPARE(size_t(rm.rowCount()), ranges.size());
  for (const auto& r : rm.totals()) {
    const auto& e = ranges[QString::fromStdString(r.name)];
    QCOMPARE(qint64(r.count), e.first);
    QCOMPARE(qint64(r.lookups), e.second);
  }
}

void compare_with_diff(const QString& before, const QString& after) {
  const QJsonObject j = diff_json(before, after);
  RecordingDiff d = diff_recordings(*open_like_the_app(before), *open_like_the_app(after));
  const QJsonObject mem = j[QStringLiteral("memory")].toObject();
  QCOMPARE(mem[QStringLiteral("peak_bytes")].toObject()[QStringLiteral("before")].toInteger(), d.peak_before);
  QCOMPARE(mem[QStringLiteral("peak_bytes")].toObject()[QStringLiteral("after")].toInteger(), d.peak_after);
  QCOMPARE(mem[QStringLiteral("table_bytes")].toObject()[QStringLiteral("before")].toInteger(), qint64(d.memory_before.total_bytes()));
  QCOMPARE(mem[QStringLiteral("table_bytes")].toObject()[QStringLiteral("after")].toInteger(), qint64(d.memory_after.total_bytes()));
  QCOMPARE(mem[QStringLiteral("grad_bytes")].toObject()[QStringLiteral("after")].toInteger(), qint64(d.memory_after.grad_bytes));
  std::vector<const TableDiff*> both, only_before, only_after;
  for (const auto& t : d.tables) {
    if (t.status == TableDiff::Status::kBoth) both.push_back(&t);
    if (t.status == TableDiff::Status::kOnlyBefore) only_before.push_back(&t);
    if (t.status == TableDiff::Status::kOnlyAfter) only_after.push_back(&t);
  }
  const QJsonArray tables = j[QStringLiteral("tables")].toArray();
  QCOMPARE(size_t(tables.size()), both.size());
  for (int i = 0; i < tables.size(); ++i) {
    const QJsonObject t = tables[i].toObject();
    QCOMPARE(QString::fromStdString(both[size_t(i)]->name), t[QStringLiteral("name")].toString());
    for (size_t m = 0; m < diff_metrics().size(); ++m) {
      QVERIFY2(t.contains(QString::fromLatin1(diff_metrics()[m].key)), diff_metrics()[m].key);
      const QJsonObject v = t[QString::fromLatin1(diff_metrics()[m].key)].toObject();
      EXPECT_SAME(both[size_t(i)]->before[m], v[QStringLiteral("before")].toDouble(), QString::fromLatin1(diff_metrics()[m].key));
      EXPECT_SAME(both[size_t(i)]->after[m], v[QStringLiteral("after")].toDouble(), QString::fromLatin1(diff_metrics()[m].key));
    }
  }
  QCOMPARE(size_t(j[QStringLiteral("only_in_before")].toArray().size()), only_before.size());
  QCOMPARE(size_t(j[QStringLiteral("only_in_after")].toArray().size()), only_after.size());
  for (size_t i = 0; i < only_after.size(); ++i)
    QCOMPARE(QString::fromStdString(only_after[i]->name), j[QStringLiteral("only_in_after")].toArray()[qsizetype(i)].toString());
}

}  // namespace

class NumbersTests : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void synthExactCounts() {
    compare_with_report(synth_recording({QStringLiteral("--tables"), QStringLiteral("3"), QStringLiteral("--rows"), QStringLiteral("20000"),
                                         QStringLiteral("--lookups"), QStringLiteral("60000"), QStringLiteral("--zipf"), QStringLiteral("1.1")}));
  }
  void synthSketchedCounts() {
    compare_with_report(synth_recording({QStringLiteral("--tables"), QStringLiteral("2"), QStringLiteral("--rows"), QStringLiteral("300000"),
                                         QStringLiteral("--lookups"), QStringLiteral("100000"), QStringLiteral("--exact-rows"),
                                         QStringLiteral("1000")}));
  }
  void fakeGpuRecordingWithTwoProcesses() { compare_with_report(fake_recording(2, 17)); }
  void dlrmUnderEdoRecord() {
    QString why;
    const QString path = dlrm_recording(&why);
    if (path.isEmpty()) QSKIP(qPrintable(why));
    compare_with_report(path);
  }
  // The Tuner view's plan and candidates are the plan `edo tune` printed and stored.
  void tunerPlanAsEdoTunePrintedIt() {
    QJsonObject j;
    const QString path = tuned_recording(&j);
    RecordingPtr rec = open_like_the_app(path);
    QVERIFY(rec->tune.has_value());
    auto result = std::make_shared<const model::TuneResult>(*rec->tune);
    QCOMPARE(qint64(result->budget_bytes), j[QStringLiteral("budget_bytes")].toInteger());
    QCOMPARE(qint64(result->plan_device_bytes), j[QStringLiteral("plan")].toObject()[QStringLiteral("device_bytes")].toInteger());
    EXPECT_SAME(result->plan_step_us, j[QStringLiteral("plan")].toObject()[QStringLiteral("step_us")].toDouble(), "plan step time");
    QCOMPARE(qint64(result->baseline_device_bytes), j[QStringLiteral("baseline")].toObject()[QStringLiteral("device_bytes")].toInteger());
    QCOMPARE(qint64(result->candidates_measured), j[QStringLiteral("candidates_measured")].toInteger());
    PlanModel plan;
    plan.setResult(result);
    const QJsonArray tables = j[QStringLiteral("tables")].toArray();
    QCOMPARE(plan.rowCount(), int(tables.size()));
    for (int i = 0; i < tables.size(); ++i) {
      const QJsonObject t = tables[i].toObject();
      QCOMPARE(plan.index(i, PlanModel::kTable).data(SortRole).toString(), t[QStringLiteral("name")].toString());
      QCOMPARE(plan.index(i, PlanModel::kStrategy).data(SortRole).toString(), t[QStringLiteral("strategy")].toString());
      const QString optimizer = t[QStringLiteral("optimizer")].toString();
      QCOMPARE(plan.index(i, PlanModel::kStrategy).data().toString(),
               t[QStringLiteral("strategy")].toString() + (optimizer.isEmpty() ? QString() : QStringLiteral(" + ") + optimizer));
      QCOMPARE(plan.index(i, PlanModel::kPlanned).data(SortRole).toLongLong(), t[QStringLiteral("device_bytes")].toInteger());
      QCOMPARE(plan.index(i, PlanModel::kRecorded).data(SortRole).toLongLong(), t[QStringLiteral("recorded_device_bytes")].toInteger());
      EXPECT_SAME(plan.index(i, PlanModel::kStepTime).data(SortRole).toDouble(), t[QStringLiteral("step_us")].toDouble(), "table step time");
      QCOMPARE(plan.index(i, PlanModel::kWhy).data().toString(), t[QStringLiteral("why")].toString());
    }
    CandidatesModel candidates;
    candidates.setResult(result);
    int in_plan = 0;
    for (int r = 0; r < candidates.rowCount(); ++r) in_plan += candidates.index(r, CandidatesModel::kInPlan).data(SortRole).toInt();
    QCOMPARE(in_plan, int(tables.size()));
  }

  void diffOfTwoSynthRecordings() {
    const QString a = synth_recording({QStringLiteral("--tables"), QStringLiteral("3"), QStringLiteral("--rows"), QStringLiteral("20000"),
                                       QStringLiteral("--lookups"), QStringLiteral("60000"), QStringLiteral("--zipf"), QStringLiteral("1.1")});
    const QString b = synth_recording({QStringLiteral("--tables"), QStringLiteral("4"), QStringLiteral("--rows"), QStringLiteral("20000"),
                                       QStringLiteral("--lookups"), QStringLiteral("90000"), QStringLiteral("--zipf"), QStringLiteral("0.9")});
    compare_with_diff(a, b);
    compare_with_diff(b, a);
  }
  void diffOfTwoDlrmRuns() {
    QString why;
    const QString a = dlrm_recording(&why);
    if (a.isEmpty()) QSKIP(qPrintable(why));
    const QString b = dlrm_recording(&why, {QStringLiteral("--steps"), QStringLiteral("6"), QStringLiteral("--dim"), QStringLiteral("32")});
    compare_with_diff(a, b);
  }
};

EDO_GUI_TEST_MAIN(NumbersTests, QGuiApplication)
#include "gui_numbers_test.moc"
