// The dashboard's model library on its own (no widgets): number formats, the downsampled
// memory timeline, a table's detail data, every item model under QAbstractItemModelTester,
// and the loader: its two stages, progress, abandoning a file, and one-line errors.
#include <QAbstractItemModelTester>
#include <QFile>
#include <QGuiApplication>
#include <QSignalSpy>
#include <QTest>
#include <QThreadPool>

#include <SQLiteCpp/Database.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "edo/model/strategy_params_json.h"
#include "edo/gui/diff/diff_model.h"
#include "edo/gui/format.h"
#include "edo/gui/job/kernels_model.h"
#include "edo/gui/tables/llm_text.h"
#include "edo/gui/recording/loss_curve.h"
#include "edo/gui/recording/memory_timeline.h"
#include "edo/gui/model_roles.h"
#include "edo/gui/job/ranks_model.h"
#include "edo/gui/recording/recording_loader.h"
#include "edo/gui/job/sessions_model.h"
#include "edo/gui/tables/table_detail.h"
#include "edo/gui/tables/tables_model.h"
#include "edo/gui/tables/top_rows_model.h"
#include "edo/gui/tables/top_tables_model.h"
#include "edo/gui/tune/tune_models.h"
#include "edo/gui/tune/tune_runner.h"
#include "edo/gui/tune/tune_words.h"
#include "edo/tuner/summary.h"
#include "edo/db/tune_store.h"
#include "edo/stats/table_stats.h"
#include "../unit/tuner/vocab_hand_stream.h"
#include "fake_gpu_recording.h"
#include "gui_test_support.h"

using namespace edo;
using namespace edo::gui;
using namespace edo::gui::testing;

namespace {

model::MemoryEvent mem_event(int64_t session, double t_s, int64_t bytes, const std::string& table) {
  return {session, static_cast<int64_t>(t_s * 1e9), bytes, 0, 0, 0, bytes > 0 ? "cudaMalloc" : "cudaFree", table};
}

model::Profile profile_with_events(std::vector<model::MemoryEvent> events, double duration_s = 10.0) {
  model::Profile p;
  model::Session s;
  s.id = 1;
  s.duration_ns = static_cast<int64_t>(duration_s * 1e9);
  p.sessions.push_back(s);
  p.memory_events = std::move(events);
  return p;
}

template <class Model>
void check_model(Model& model) {
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  // Every cell shows something and has a sort key (cells of a table missing on one side of a
  // diff sort as nothing).
  for (int r = 0; r < model.rowCount(); ++r)
    for (int c = 0; c < model.columnCount(); ++c) {
      const QModelIndex index = model.index(r, c);
      QVERIFY(index.data(Qt::DisplayRole).isValid());
      QVERIFY(index.data(SortRole).isValid() || model.inherits("edo::gui::DiffModel"));
    }
  for (int c = 0; c < model.columnCount(); ++c) QVERIFY(!model.headerData(c, Qt::Horizontal).toString().isEmpty());
}

}  // namespace

class ModelTests : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // Issue 29: the loss curve the Diff view draws. 10,000 steps become about 2 x 100 points
  // (buckets of 100), each bucket's lowest and highest loss, so a one-step spike survives; the
  // first non-finite loss is kept as a step (the line has finite points only).
  void lossCurveIsDownsampledKeepingSpikes() {
    model::Profile p;
    model::Session s;
    s.id = 1;
    for (uint64_t step = 1; step <= 10'000; ++step) s.losses.push_back({step, 1.0 + 1.0 / static_cast<double>(step)});
    s.losses[4'999].loss = 50.0;                                        // step 5000: a spike
    s.losses[7'999].loss = std::numeric_limits<double>::quiet_NaN();    // step 8000
    p.sessions.push_back(s);
    const LossCurve c = build_loss_curve(p, 100);
    QCOMPARE(c.count, size_t{10'000});
    QVERIFY(c.first_nonfinite_step.has_value());
    QCOMPARE(*c.first_nonfinite_step, uint64_t{8000});
    QVERIFY(c.step.size() <= 200);
    QVERIFY(c.step.size() >= 100);
    QVERIFY(std::is_sorted(c.step.begin(), c.step.end()));
    QCOMPARE(*std::max_element(c.loss.begin(), c.loss.end()), 50.0);
    QCOMPARE(c.loss.front(), 2.0);  // step 1: the first bucket's highest
    for (double l : c.loss) QVERIFY(std::isfinite(l));
    QVERIFY(build_loss_curve(model::Profile{}).empty());
  }

  // The Ranks view's models (issue 22): one row per rank with its lookups of each table (the
  // numbers of `edo report --json`'s "ranks"), the same from the outline and the full load, and
  // per table the busiest rank against the mean.
  void ranksModels() {
    const QString path = ranks_recording();
    auto rec = load_recording(path);
    QCOMPARE(rec->ranks.size(), size_t(4));
    RanksModel ranks;
    ranks.setRecording(rec);
    check_model(ranks);
    QCOMPARE(ranks.rowCount(), 4);
    QCOMPARE(ranks.columnCount(), int(RanksModel::kFirstTable) + 3);  // emb.shared, emb.node0, emb.node1
    int shared = -1;
    for (int c = RanksModel::kFirstTable; c < ranks.columnCount(); ++c)
      if (ranks.headerData(c, Qt::Horizontal).toString() == QStringLiteral("emb.shared")) shared = c;
    QVERIFY(shared >= 0);
    for (int r = 0; r < 4; ++r) {
      QCOMPARE(ranks.index(r, RanksModel::kRank).data(SortRole).toLongLong(), qlonglong(r));
      QCOMPARE(ranks.index(r, shared).data(SortRole).toULongLong(), qulonglong(1000 * (r + 1)));
      QCOMPARE(ranks.index(r, RanksModel::kLookups).data(SortRole).toULongLong(), qulonglong(1000 * (r + 1) + 800));
      QCOMPARE(ranks.index(r, RanksModel::kPeak).data(SortRole).toLongLong(), qlonglong(r + 1) << 20);
      QVERIFY(ranks.index(r, RanksModel::kNode).data().toString().startsWith(QStringLiteral("node%1").arg(r / 2)));
      QCOMPARE(ranks.index(r, shared).data(ShareRole).toDouble(), (r + 1) / 4.0);
    }
    // The outline (no statistics yet) already has every rank's lookups.
    db::ProfileStore store(path.toStdString(), db::ProfileStore::Mode::kReadOnly);
    auto outline = make_outline(path, store.load_outline());
    QCOMPARE(outline->ranks.size(), size_t(4));
    for (size_t r = 0; r < 4; ++r) QCOMPARE(outline->ranks[r].lookups_by_table, rec->ranks[r].lookups_by_table);
    ImbalanceModel imbalance;
    imbalance.setRecording(rec);
    check_model(imbalance);
    QCOMPARE(imbalance.rowCount(), 3);
    // emb.node0 and emb.node1: read by 2 of 4 ranks, 800 each (mean 400: 2.00x); emb.shared:
    // rank 3's 4000 against the mean 2500 (1.60x).
    QCOMPARE(imbalance.index(2, ImbalanceModel::kTable).data().toString(), QStringLiteral("emb.shared"));
    QCOMPARE(imbalance.index(2, ImbalanceModel::kBusiestRank).data(SortRole).toLongLong(), qlonglong(3));
    QCOMPARE(imbalance.index(2, ImbalanceModel::kImbalance).data().toString(), QStringLiteral("1.60x"));
    QCOMPARE(imbalance.index(0, ImbalanceModel::kImbalance).data().toString(), QStringLiteral("2.00x"));
    QCOMPARE(imbalance.index(2, ImbalanceModel::kImbalance).data(ShareRole).toDouble(), 0.6 / 3.0);
    // A recording without ranks has none.
    RanksModel none;
    none.setRecording(load_recording(fake_recording(1, 0)));
    QCOMPARE(none.rowCount(), 0);
  }

  void formats() {
    QCOMPARE(format_bytes(512), QStringLiteral("512 B"));
    QCOMPARE(format_bytes(uint64_t{3} << 30), QStringLiteral("3.00 GiB"));
    QCOMPARE(format_count(1234567), QStringLiteral("1,234,567"));
    QCOMPARE(format_count(12), QStringLiteral("12"));
    QCOMPARE(format_share(0.1234), QStringLiteral("12.3%"));
    QCOMPARE(format_duration_ns(850), QStringLiteral("850 ns"));
    QCOMPARE(format_duration_ns(12.4e6), QStringLiteral("12.4 ms"));
    QCOMPARE(format_duration_ns(3.2e9), QStringLiteral("3.20 s"));
    QCOMPARE(format_duration_ns(245e9), QStringLiteral("4 min 05 s"));
    QCOMPARE(format_change(100, 150), QStringLiteral("+50.0%"));
    QCOMPARE(format_change(0, 5), QStringLiteral("new"));
    QCOMPARE(format_change(5, 5), QStringLiteral("="));
    QCOMPARE(format_share_change(0.5, 0.25), QStringLiteral("-25.0 pt"));
  }

  void axisUnits() {
    QCOMPARE(byte_unit(100).name, QStringLiteral("B"));
    QCOMPARE(byte_unit(3.0 * (1 << 20)).name, QStringLiteral("MiB"));
    QCOMPARE(byte_unit(3.0 * (1 << 20)).divisor, double(1 << 20));
    QCOMPARE(byte_unit(5e12).name, QStringLiteral("TiB"));
    QCOMPARE(time_unit(60).name, QStringLiteral("s"));
    QCOMPARE(time_unit(0.02).name, QStringLiteral("ms"));
    QCOMPARE(time_unit(2e-5).name, QStringLiteral("µs"));
  }

  // Many events, a one-event spike between two buckets' worth of churn: the downsampled
  // series keep the spike at its exact height, and the peak is Profile::peak_bytes().
  void timelineKeepsThePeakAndDownsamples() {
    std::vector<model::MemoryEvent> ev;
    ev.push_back(mem_event(1, 0.0, 1000, "a"));
    for (int i = 0; i < 50000; ++i) {
      const double t = 0.001 + i * 1.9e-4;
      ev.push_back(mem_event(1, t, 300, "b"));
      ev.push_back(mem_event(1, t + 1e-5, -300, "b"));
    }
    ev.push_back(mem_event(1, 5.00001, 7777, ""));  // the spike
    ev.push_back(mem_event(1, 5.00002, -7777, ""));
    model::Profile p = profile_with_events(ev);
    auto tls = build_timelines(p, 8, 100);
    QCOMPARE(tls.size(), size_t{1});
    const StackedTimeline& tl = tls[0];
    QCOMPARE(tl.peak_bytes, p.peak_bytes());
    QCOMPARE(tl.peak_bytes, int64_t{1000 + 7777});
    QVERIFY(std::abs(tl.peak_time_s - 5.00001) < 1e-6);
    QVERIFY2(tl.time_s.size() <= 2 * 100 + 3, qPrintable(QString::number(tl.time_s.size())));
    double max_total = 0;
    for (size_t j = 0; j < tl.time_s.size(); ++j) {
      max_total = std::max(max_total, tl.total_at(j));
      if (j > 0) QVERIFY(tl.time_s[j] >= tl.time_s[j - 1]);
    }
    QCOMPARE(max_total, double(tl.peak_bytes));
    QCOMPARE(tl.events, ev.size());
    QCOMPARE(tl.duration_s, 10.0);
    QCOMPARE(tl.time_s.back(), 10.0);
    // Series: tables by their own peak, then "other" for the untagged spike.
    QCOMPARE(tl.series, (std::vector<std::string>{"a", "b", kOtherSeries}));
    // After the last event only table a is live.
    QCOMPARE(tl.total_at(tl.time_s.size() - 1), 1000.0);
  }

  void timelineGroupsSmallTablesAsOther() {
    std::vector<model::MemoryEvent> ev;
    for (int t = 0; t < 12; ++t) ev.push_back(mem_event(1, 0.1 * t, 1000 * (t + 1), "t" + std::to_string(t)));
    model::Profile p = profile_with_events(ev, 2.0);
    auto tl = build_timelines(p, 4, 50).at(0);
    QCOMPARE(tl.series, (std::vector<std::string>{"t11", "t10", "t9", kOtherSeries}));
    const size_t last = tl.time_s.size() - 1;
    QCOMPARE(tl.bytes[0][last], 12000.0);
    QCOMPARE(tl.bytes[3][last], double(1000 * (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9)));
    QCOMPARE(tl.peak_bytes, p.peak_bytes());
  }

  // Frees of memory allocated before tracing began take the running sum below zero; the
  // stacked series never draw below zero, the peak is still the running sum's.
  void timelineClampsUnmatchedFrees() {
    model::Profile p = profile_with_events({mem_event(1, 0.5, -5000, ""), mem_event(1, 1.0, 3000, "a")}, 2.0);
    auto tl = build_timelines(p).at(0);
    for (const auto& s : tl.bytes)
      for (double v : s) QVERIFY(v >= 0);
    QCOMPARE(tl.peak_bytes, p.peak_bytes());
    QCOMPARE(tl.peak_bytes, int64_t{0});
  }

  void timelinesPerSession() {
    model::Profile p = profile_with_events({mem_event(1, 0.1, 100, "a"), mem_event(2, 0.2, 900, "a"), mem_event(2, 0.3, -900, "a")});
    p.sessions.push_back(p.sessions[0]);
    p.sessions[1].id = 2;
    auto tls = build_timelines(p);
    QCOMPARE(tls.size(), size_t{2});
    QCOMPARE(tls[0].peak_bytes, int64_t{100});
    QCOMPARE(tls[1].peak_bytes, int64_t{900});
    QCOMPARE(std::max(tls[0].peak_bytes, tls[1].peak_bytes), p.peak_bytes());
  }

  void tableBytesStack() {
    auto rec = make_recording(QStringLiteral("fake"), fake::make_fake_gpu_profile({}));
    auto stack = table_bytes_stack(rec->tables, 4);
    QCOMPARE(stack.size(), size_t{4});
    QCOMPARE(stack.back().name, std::string(kOtherSeries));
    uint64_t sum = 0, expected = 0;
    for (const auto& s : stack) sum += s.bytes;
    for (const auto& t : rec->tables) expected += (t.shares_weights_of.empty() ? t.weight_bytes : 0) + t.optimizer_bytes + t.grad_bytes;
    QCOMPARE(expected, rec->profile.table_bytes());
    QCOMPARE(sum, expected);
    QVERIFY(stack[0].bytes >= stack[1].bytes && stack[1].bytes >= stack[2].bytes);
  }

  // A table read in a known pattern: row r (0..99) read (100 - r) times.
  void tableDetailFromAKnownStream() {
    stats::TableIngestor ing(1000, stats::StatsConfig{});
    std::vector<int64_t> idx;
    for (int r = 0; r < 100; ++r)
      for (int k = 0; k < 100 - r; ++k) idx.push_back(r);
    ing.add(idx.data(), idx.size());
    ing.close_window();
    model::Profile p;
    p.sessions.push_back({});
    p.sessions[0].id = 1;
    model::Table t;
    t.session_id = 1;
    t.name = "known";
    t.rows = 1000;
    t.dim = 8;
    t.dtype = "fp16";
    t.weight_bytes = 1000 * 8 * 2;
    t.aggregate = ing.take_delta();
    p.tables.push_back(std::move(t));
    auto rec = make_recording(QStringLiteral("known"), std::move(p));
    TableDetail d = build_table_detail(rec->tables.at(0), 10);
    QCOMPARE(d.lookups, uint64_t{5050});
    QCOMPARE(d.ranked_rows, uint64_t{100});
    QCOMPARE(d.row_bytes, uint64_t{16});
    // Ranks 1..20 are single-rank bins: exact counts 100, 99, ...
    QCOMPARE(d.rank_frequency.at(0).x, 1.0);
    QCOMPARE(d.rank_frequency.at(0).y, 100.0);
    QCOMPARE(d.rank_frequency.at(4).y, 96.0);
    // The bins cover every ranked row once: mean x width sums to the lookups.
    double total = 0;
    uint64_t prev_hi = 0;
    std::vector<uint64_t> edges;
    for (int i = 0;; ++i) {
      const double x = std::round(std::pow(10.0, i / 20.0));
      if (x >= 100) break;
      if (edges.empty() || edges.back() != static_cast<uint64_t>(x)) edges.push_back(static_cast<uint64_t>(x));
    }
    edges.push_back(100);
    QCOMPARE(d.rank_frequency.size(), edges.size());
    for (size_t i = 0; i < edges.size(); ++i) {
      const uint64_t hi = i + 1 < edges.size() ? edges[i + 1] - 1 : 100;
      const uint64_t width = hi - edges[i] + 1;
      total += d.rank_frequency[i].y * static_cast<double>(width);
      QVERIFY(edges[i] == prev_hi + 1);
      prev_hi = hi;
    }
    QVERIFY(std::abs(total - 5050.0) < 1e-6);
    // Coverage: the top 1 % of 1000 rows = 10 rows = 100 + 99 + ... + 91 reads.
    const double top10 = (100 + 91) * 10 / 2.0 / 5050.0;
    QVERIFY(std::abs(coverage_at(d, 0.01) - top10) < 1e-12);
    QVERIFY(std::abs(rec->tables[0].summary.coverage_top_1pct - top10) < 1e-12);
    QCOMPARE(coverage_at(d, 1.0), 1.0);
    // Top rows, descending.
    QCOMPARE(d.top_rows.size(), size_t{10});
    QCOMPARE(d.top_rows[0], (std::pair<uint64_t, uint64_t>{0, 100}));
    QCOMPARE(d.top_rows[9], (std::pair<uint64_t, uint64_t>{9, 91}));
    // The LRU curve is the summary's (edo report's), in order.
    QCOMPARE(d.lru.size(), rec->tables[0].summary.lru_curve.size());
    QVERIFY(d.zipf_valid);
    QCOMPARE(d.zipf_fit.size(), d.rank_frequency.size());
  }

  // The fitted line follows a Zipf stream it was fitted on.
  void zipfLineFollowsAZipfStream() {
    stats::ZipfGenerator gen(100000, 1.1, 5);
    stats::TableIngestor ing(100000, stats::StatsConfig{});
    std::vector<int64_t> idx(2'000'000);
    gen.fill(idx.data(), idx.size());
    ing.add(idx.data(), idx.size());
    model::Profile p;
    p.sessions.push_back({});
    p.sessions[0].id = 1;
    model::Table t;
    t.session_id = 1;
    t.name = "zipf";
    t.rows = 100000;
    t.dim = 4;
    t.dtype = "fp32";
    t.aggregate = ing.take_delta();
    p.tables.push_back(std::move(t));
    auto rec = make_recording(QStringLiteral("zipf"), std::move(p));
    TableDetail d = build_table_detail(rec->tables.at(0));
    QVERIFY(std::abs(d.zipf_alpha - 1.1) < 0.1);
    // Between ranks 10 and 1000 the line is within a factor 1.5 of the observed means.
    for (size_t i = 0; i < d.rank_frequency.size(); ++i) {
      if (d.rank_frequency[i].x < 10 || d.rank_frequency[i].x > 1000) continue;
      const double ratio = d.zipf_fit[i].y / d.rank_frequency[i].y;
      QVERIFY2(ratio > 1 / 1.5 && ratio < 1.5, qPrintable(QStringLiteral("rank %1: ratio %2").arg(d.rank_frequency[i].x).arg(ratio)));
    }
    // The coverage curve rises to 1 and never falls.
    for (size_t i = 1; i < d.coverage.size(); ++i) QVERIFY(d.coverage[i].y >= d.coverage[i - 1].y);
    QVERIFY(coverage_at(d, 0.0005) < coverage_at(d, 0.002));
  }

  // A table read on two ranks: the detail has both LRU curves (issue 22). Rank 0 reads the even
  // rows of 0..999 cyclically, rank 1 the odd ones: each rank's cache of 500 rows holds its
  // cycle (90 % hits), one cache of 500 rows for both never hits.
  void detailHasTheModelParallelCurveOfATableReadOnTwoRanks() {
    model::Profile p;
    for (int64_t rank : {0, 1}) {
      model::Session s;
      s.id = rank + 1;
      s.pid = 10 + rank;
      s.rank = rank;
      p.sessions.push_back(s);
      std::vector<int64_t> idx;
      for (int cycle = 0; cycle < 10; ++cycle)
        for (int64_t r = rank; r < 1000; r += 2) idx.push_back(r);
      stats::TableIngestor ing(1000, stats::StatsConfig{});
      ing.add(idx.data(), idx.size());
      model::Table t;
      t.session_id = s.id;
      t.name = "emb";
      t.rows = 1000;
      t.dim = 4;
      t.dtype = "fp32";
      t.aggregate = ing.take_delta();
      p.tables.push_back(std::move(t));
    }
    auto rec = make_recording(QStringLiteral("two ranks"), std::move(p));
    TableDetail d = build_table_detail(rec->tables.at(0));
    QCOMPARE(d.lru_union.size(), d.lru.size());
    bool at_500 = false;
    for (size_t i = 0; i < d.lru.size(); ++i) {
      QCOMPARE(d.lru_union[i].x, d.lru[i].x);
      if (d.lru[i].x != 500) continue;
      at_500 = true;
      QVERIFY(std::abs(d.lru[i].y - 0.9) < 1e-12);
      QCOMPARE(d.lru_union[i].y, 0.0);
    }
    QVERIFY(at_500);
  }

  void itemModelsPassTheModelTester() {
    fake::FakeGpuRecordingOptions o;
    o.sessions = 2;
    o.tables = 5;
    o.rows = 20000;
    o.lookups = 40000;
    o.memory_events = 2000;
    o.steps = 20;
    RecordingPtr rec = make_recording(QStringLiteral("fake"), fake::make_fake_gpu_profile(o));
    SessionsModel sessions;
    sessions.setRecording(rec);
    QCOMPARE(sessions.rowCount(), 2);
    check_model(sessions);
    TablesModel tables;
    tables.setRecording(rec);
    QCOMPARE(tables.rowCount(), 6);  // 5 tables + the tied name, merged over both processes
    check_model(tables);
    for (auto measure : {TopTablesModel::Measure::kBytes, TopTablesModel::Measure::kLookups}) {
      TopTablesModel top(measure, 3);
      top.setRecording(rec);
      QCOMPARE(top.rowCount(), 3);
      check_model(top);
      QVERIFY(top.index(0, TopTablesModel::kShare).data(ShareRole).toDouble() > 0);
    }
    auto detail = std::make_shared<TableDetail>(build_table_detail(rec->tables[0], 25));
    TopRowsModel rows;
    rows.setDetail(detail);
    QCOMPARE(rows.rowCount(), 25);
    check_model(rows);
    KernelsModel kernels;
    kernels.setRecording(rec);
    QCOMPARE(kernels.rowCount(), 5);  // same names in both processes: summed
    check_model(kernels);
    RangesModel ranges;
    ranges.setRecording(rec);
    QCOMPARE(ranges.rowCount(), 4);
    check_model(ranges);
    DiffModel diff;
    o.seed = 99;
    o.tables = 4;
    RecordingPtr other = make_recording(QStringLiteral("other"), fake::make_fake_gpu_profile(o));
    diff.setDiff(std::make_shared<RecordingDiff>(diff_recordings(*rec, *other)));
    QCOMPARE(diff.rowCount(), 6);
    check_model(diff);
    // Under a table in both recordings: one row per changed metric, before / after / change.
    const RecordingDiff* d = diff.diff();
    const QModelIndex first = diff.index(0, 0);
    QCOMPARE(int(d->tables[0].status), int(TableDiff::Status::kBoth));
    int changed = 0;
    for (size_t m = 0; m < diff_metrics().size(); ++m) changed += d->tables[0].before[m] != d->tables[0].after[m];
    QVERIFY(changed > 0);
    QCOMPARE(diff.rowCount(first), changed);
    QCOMPARE(diff.index(0, DiffModel::kName, first).data().toString().isEmpty(), false);
    QVERIFY(diff.index(0, DiffModel::kChange, first).data().toString().contains(QLatin1Char('%')) ||
            diff.index(0, DiffModel::kChange, first).data().toString().contains(QStringLiteral("pt")) ||
            diff.index(0, DiffModel::kChange, first).data().toString() == QStringLiteral("new"));
    // A table in only one recording lists every metric, with a dash on the missing side.
    const QModelIndex last = diff.index(5, 0);
    QCOMPARE(diff.index(5, DiffModel::kChange).data().toString(), QStringLiteral("only before"));
    QCOMPARE(diff.rowCount(last), int(diff_metrics().size()));
    QCOMPARE(diff.index(0, DiffModel::kAfter, last).data().toString(), QStringLiteral("–"));
    // Models emptied again stay consistent.
    tables.setRecording(nullptr);
    QCOMPARE(tables.rowCount(), 0);
    diff.setDiff(nullptr);
    QCOMPARE(diff.rowCount(), 0);
  }

  // The outline knows bytes and lookups; the statistics columns say they are loading.
  void outlineMatchesTheFullRecording() {
    const QString path = fake_recording(2, 5);
    db::ProfileStore store(path.toStdString(), db::ProfileStore::Mode::kReadOnly);
    RecordingPtr outline = make_outline(path, store.load_outline());
    RecordingPtr full = load_recording(path);
    QVERIFY(!outline->has_statistics);
    QVERIFY(full->has_statistics);
    QCOMPARE(outline->tables.size(), full->tables.size());
    for (size_t i = 0; i < full->tables.size(); ++i) {
      QCOMPARE(outline->tables[i].name, full->tables[i].name);
      QCOMPARE(outline->tables[i].weight_bytes, full->tables[i].weight_bytes);
      QCOMPARE(outline->tables[i].optimizer_bytes, full->tables[i].optimizer_bytes);
      QCOMPARE(outline->tables[i].grad_bytes, full->tables[i].grad_bytes);
      QCOMPARE(outline->tables[i].summary.lookups, full->tables[i].summary.lookups);
    }
    QCOMPARE(outline->profile.peak_bytes(), full->profile.peak_bytes());
    QCOMPARE(outline->timelines.size(), full->timelines.size());
    QCOMPARE(outline->timelines[0].time_s, full->timelines[0].time_s);
    TablesModel model;
    model.setRecording(outline);
    QCOMPARE(model.index(0, TablesModel::kTop1).data().toString(), QStringLiteral("…"));
    QCOMPARE(model.index(0, TablesModel::kLookups).data(SortRole).toULongLong(), full->tables[0].summary.lookups);
  }

  void loaderDeliversOutlineProgressThenRecording() {
    const QString path = fake_recording(2, 0);
    RecordingLoader loader;
    QSignalSpy outline(&loader, &RecordingLoader::outlineReady);
    QSignalSpy progress(&loader, &RecordingLoader::progress);
    QSignalSpy loaded(&loader, &RecordingLoader::loaded);
    QSignalSpy failed(&loader, &RecordingLoader::failed);
    QSignalSpy facts(&loader, &RecordingLoader::torchrecFactsReady);
    std::vector<int> order;
    connect(&loader, &RecordingLoader::outlineReady, this, [&] { order.push_back(1); });
    connect(&loader, &RecordingLoader::loaded, this, [&] { order.push_back(2); });
    connect(&loader, &RecordingLoader::torchrecFactsReady, this, [&] { order.push_back(3); });
    loader.open(path);
    QVERIFY(loader.busy());
    QVERIFY(loaded.wait(240'000));
    QVERIFY(facts.count() == 1 || facts.wait(240'000));
    QCOMPARE(failed.count(), 0);
    QCOMPARE(outline.count(), 1);
    QCOMPARE(order, (std::vector<int>{1, 2, 3}));
    QCOMPARE(facts.at(0).at(0).value<RecordingPtr>(), loaded.at(0).at(0).value<RecordingPtr>());
    QVERIFY(facts.at(0).at(0).value<RecordingPtr>()->torchrec_facts->get());
    QVERIFY(progress.count() >= 2);
    double last = -1;
    for (const auto& args : progress) {
      QVERIFY(args.at(0).toDouble() >= last);
      last = args.at(0).toDouble();
    }
    QCOMPARE(last, 1.0);
    QVERIFY(!loader.busy());
    auto rec = loaded.at(0).at(0).value<RecordingPtr>();
    QVERIFY(rec->has_statistics);
    QCOMPARE(rec->profile.sessions.size(), size_t{2});
  }

  void loaderAbandonsAnEarlierFile() {
    const QString first = fake_recording(2, 0);
    const QString second = synth_recording({QStringLiteral("--tables"), QStringLiteral("2"), QStringLiteral("--rows"),
                                            QStringLiteral("1000"), QStringLiteral("--lookups"), QStringLiteral("5000")});
    RecordingLoader loader;
    QSignalSpy loaded(&loader, &RecordingLoader::loaded);
    QSignalSpy outline(&loader, &RecordingLoader::outlineReady);
    loader.open(first);
    loader.open(second);
    QVERIFY(loaded.wait(240'000));
    // Anything of the first file still in flight: let every load job finish, then deliver what
    // they posted to this thread (waiting for the work itself, not for an amount of time).
    QThreadPool::globalInstance()->waitForDone();
    QCoreApplication::sendPostedEvents();
    QCoreApplication::processEvents();
    QCOMPARE(loaded.count(), 1);
    QCOMPARE(loaded.at(0).at(0).value<RecordingPtr>()->path, second);
    for (const auto& args : outline) QCOMPARE(args.at(0).value<RecordingPtr>()->path, second);
  }

  // The Tables view's columns are `edo report`'s, and a tied table reads as it does there.
  void tablesModelHasTheReportsColumnsAndTies() {
    // The last table tied under a second name that reads nothing itself (a tied output head).
    const QString path = temp_dir() + QStringLiteral("/unread-tie.edodb");
    fake::FakeGpuRecordingOptions o;
    o.tables = 3;
    o.rows = 5'000;
    o.lookups = 20'000;
    o.memory_events = 500;
    o.steps = 10;
    o.tied_name_reads = false;
    fake::write_fake_gpu_recording(path.toStdString(), o);
    RecordingPtr rec = load_recording(path);
    TablesModel model;
    model.setRecording(rec);
    check_model(model);
    QStringList heads;
    for (int c = 0; c < model.columnCount(); ++c) heads << model.headerData(c, Qt::Horizontal).toString();
    for (const char* h : {"Top 0.1%", "Top 1%", "Top 10%", "Zipf α", "LRU 1%", "LRU 10%", "LRU 50%"})
      QVERIFY2(heads.contains(QString::fromUtf8(h)), h);
    const Run report = run(edo_bin(), {QStringLiteral("report"), QStringLiteral("--wide"), path});  // a table a line
    QCOMPARE(report.exit_code, 0);
    int tied = 0;
    for (int r = 0; r < model.rowCount(); ++r) {
      const model::TableView* t = model.table(r);
      auto text = [&](int column) { return model.index(r, column).data().toString(); };
      if (!TablesModel::countedWithOwner(*t)) {
        QVERIFY(text(TablesModel::kLookups) != QStringLiteral("(tied)"));
        QCOMPARE(text(TablesModel::kLru50), format_share(t->summary.lru_hit_rate_50pct));
        QCOMPARE(text(TablesModel::kTop01), format_share(t->summary.coverage_top_0_1pct));
        continue;
      }
      ++tied;
      QCOMPARE(text(TablesModel::kLookups), QStringLiteral("(tied)"));
      for (int c : {int(TablesModel::kUnique), int(TablesModel::kTop01), int(TablesModel::kTop1), int(TablesModel::kTop10),
                    int(TablesModel::kZipf), int(TablesModel::kLru1), int(TablesModel::kLru10), int(TablesModel::kLru50)})
        QCOMPARE(text(c), QStringLiteral("–"));
      // `edo report` prints the same table the same way.
      bool in_report = false;
      for (const QByteArray& line : report.out.split('\n'))
        in_report |= line.startsWith(QByteArray::fromStdString(t->name)) && line.contains("(tied)");
      QVERIFY2(in_report, t->name.c_str());
    }
    QCOMPARE(tied, 1);
  }

  // Issue 33: the Tables view's Activation and LM head columns and the Table view's summary,
  // from the notes the PyTorch hooks write (the values llm_family_job.py's run produces: V=500,
  // D=16, B=4, T=12, fp32, AdamW; an untied head of its own, a tied one under its own name).
  void tablesModelShowsActivationsAndTheLmHead() {
    model::Profile p;
    model::Session s;
    s.id = 1;
    s.pid = 10;
    s.command = "python3 gpt.py";
    p.sessions.push_back(s);
    auto table = [&](const char* name, uint64_t rows) {
      model::Table t;
      t.id = static_cast<int64_t>(p.tables.size()) + 1;
      t.session_id = 1;
      t.name = name;
      t.rows = rows;
      t.dim = 16;
      t.dtype = "fp32";
      t.device = "host";
      t.weight_bytes = rows * 16 * 4;
      p.tables.push_back(t);
    };
    table("wte", 500);
    table("tags", 100);
    table("wpe", 12);
    // B x T x D x 4 = 3072 bytes of output, the same of gradient; bags x D x 4 = 256.
    p.metadata["session.1.pytorch.activation.wte"] =
        R"({"calls": 1, "dtype": "fp32", "grad_bytes": 3072, "output_bytes": 3072, "peak_bytes": 6144, "shape": [4, 12, 16]})";
    p.metadata["session.1.pytorch.activation.tags"] =
        R"({"calls": 1, "dtype": "fp32", "grad_bytes": 256, "output_bytes": 256, "peak_bytes": 512, "shape": [4, 16]})";
    // V x D x 4 = 32000 bytes each: weights, gradient, exp_avg, exp_avg_sq.
    p.metadata["session.1.pytorch.lm_head.wte"] =
        R"({"dense_read_bytes_per_step": 32000, "dense_reads_per_step": 1, "dim": 16, "dtype": "fp32", "grad_bytes": 32000,)"
        R"( "head": "lm_head", "optimizer_bytes": 64000, "optimizer_state": {"adamw.exp_avg": 32000, "adamw.exp_avg_sq": 32000},)"
        R"( "rows": 500, "tied": false, "weight_bytes": 32000})";
    RecordingPtr rec = make_recording(QStringLiteral("/tmp/llm.edodb"), p);
    TablesModel model;
    model.setRecording(rec);
    check_model(model);
    QCOMPARE(model.headerData(TablesModel::kActivation, Qt::Horizontal).toString(), QStringLiteral("Activation"));
    QCOMPARE(model.headerData(TablesModel::kLmHead, Qt::Horizontal).toString(), QStringLiteral("LM head"));
    auto row_of = [&](const std::string& name) {
      for (int r = 0; r < model.rowCount(); ++r)
        if (model.table(r)->name == name) return r;
      return -1;
    };
    auto cell = [&](const char* name, int column, int role = Qt::DisplayRole) { return model.index(row_of(name), column).data(role); };
    QCOMPARE(cell("wte", TablesModel::kActivation).toString(), format_bytes(6144));
    QCOMPARE(cell("wte", TablesModel::kActivation, SortRole).toULongLong(), 6144ULL);
    QCOMPARE(cell("wte", TablesModel::kActivation, Qt::ToolTipRole).toString(),
             QStringLiteral("3.00 KiB output + 3.00 KiB gradient, 4 × 12 × 16 fp32, 1 call(s) per step"));
    QCOMPARE(cell("tags", TablesModel::kActivation).toString(), format_bytes(512));
    QCOMPARE(cell("wpe", TablesModel::kActivation).toString(), QStringLiteral("–"));
    QCOMPARE(cell("wte", TablesModel::kLmHead).toString(), QStringLiteral("lm_head (untied, %1)").arg(format_bytes(128000)));
    QCOMPARE(cell("wte", TablesModel::kLmHead, SortRole).toULongLong(), 128000ULL);
    QCOMPARE(cell("tags", TablesModel::kLmHead).toString(), QString());
    const QString detail = tableLlmSummary(rec->profile, *model.table(row_of("wte")));
    QVERIFY2(detail.contains(QStringLiteral("LM head lm_head, untied: weights 31.25 KiB, gradient 31.25 KiB, optimizer state 62.50 KiB")),
             qPrintable(detail));
    QVERIFY2(detail.contains(QStringLiteral("activation per step: 6.00 KiB")), qPrintable(detail));
    QCOMPARE(tableLlmSummary(rec->profile, *model.table(row_of("wpe"))), QString());

    // Tied: the head registered under its own name on the token table's weights.
    p.metadata["session.1.pytorch.lm_head.wte"] =
        R"({"dense_read_bytes_per_step": 32000, "dense_reads_per_step": 1, "dim": 16, "dtype": "fp32", "grad_bytes": 0, "head": "lm_head",)"
        R"( "optimizer_bytes": 0, "optimizer_state": {}, "rows": 500, "tied": true, "weight_bytes": 0})";
    table("lm_head", 500);
    p.ties.push_back({1, "wte", "lm_head"});
    model.setRecording(make_recording(QStringLiteral("/tmp/llm-tied.edodb"), p));
    QCOMPARE(cell("wte", TablesModel::kLmHead).toString(), QStringLiteral("lm_head (tied)"));
    QCOMPARE(cell("wte", TablesModel::kLmHead, SortRole).toULongLong(), 0ULL);
    QCOMPARE(cell("lm_head", TablesModel::kLmHead).toString(), QStringLiteral("head of wte (tied)"));
    const QString tied = tableLlmSummary(p, *model.table(row_of("wte")));
    QVERIFY2(tied.contains(QStringLiteral("LM head lm_head, tied: the table's own weights")), qPrintable(tied));
  }

  // Issue 33 point 5: the Table view's vocabulary coverage of a token table, on the hand-worked
  // stream of tests/unit/tuner/vocab_hand_stream.h (8 ids, fitted on 700 lookups, scored on 300):
  // 99 %: ids {1, 2, 3}, 280 of 300 held out; 99.9 % and 99.99 %: ids 1..5, 290 of 300. A table
  // the hooks noted no LM head for gets none.
  void tableViewShowsTheVocabularyCoverageOfATokenTable() {
    model::Profile p;
    model::Session s;
    s.id = 1;
    p.sessions.push_back(s);
    for (const char* name : {"wte", "item"}) {
      model::Table t;
      t.id = static_cast<int64_t>(p.tables.size()) + 1;
      t.session_id = 1;
      t.name = name;
      t.rows = tuner::testing::kVocab;
      t.dim = 4;
      t.dtype = "fp32";
      t.weight_bytes = t.rows * 16;
      t.aggregate = tuner::testing::recorded_vocab(tuner::testing::hand_stream(), 1 << 16);
      p.tables.push_back(std::move(t));
    }
    p.metadata["session.1.pytorch.lm_head.wte"] =
        R"({"dense_read_bytes_per_step": 128, "dense_reads_per_step": 1, "dim": 4, "dtype": "fp32", "grad_bytes": 0, "head": "lm_head",)"
        R"( "optimizer_bytes": 0, "optimizer_state": {}, "rows": 8, "tied": true, "weight_bytes": 0})";
    RecordingPtr rec = make_recording(QStringLiteral("/tmp/vocab.edodb"), p);
    const QString wte = vocabCoverageText(rec->profile, *rec->find_table("wte"));
    QCOMPARE(wte, QStringLiteral("vocabulary coverage (fitted on the first 70 % of lookups, scored on the rest): "
                                 "99 %: 3 ids (93.33 % held out) · 99.9 %: 5 ids (96.67 % held out) · "
                                 "99.99 %: 5 ids (96.67 % held out)"));
    QVERIFY2(tableLlmSummary(rec->profile, *rec->find_table("wte")).contains(wte), "not in the Table view's summary");
    QCOMPARE(vocabCoverageText(rec->profile, *rec->find_table("item")), QString());
    QCOMPARE(tableLlmSummary(rec->profile, *rec->find_table("item")), QString());
  }

  // Processes: each one's role in the job, and what is known of a forked worker's exit.
  void sessionsShowRolesAndWhatIsKnownOfExits() {
    model::Profile p;
    auto session = [&](int64_t id, int64_t pid, int64_t parent, std::optional<int> exit) {
      model::Session s;
      s.id = id;
      s.pid = pid;
      s.parent_pid = parent;
      s.command = "python3 train.py";
      s.host = "h";
      s.exit_code = exit;
      s.duration_ns = 1'000'000'000;
      p.sessions.push_back(s);
    };
    session(1, 100, 1, 0);
    session(2, 101, 100, std::nullopt);
    session(3, 102, 100, std::nullopt);
    RecordingPtr rec = make_recording(QStringLiteral("/tmp/roles.edodb"), p);
    SessionsModel model;
    model.setRecording(rec);
    check_model(model);
    auto text = [&](int row, int column) { return model.index(row, column).data().toString(); };
    QCOMPARE(text(0, SessionsModel::kRole), QStringLiteral("root"));
    QCOMPARE(text(1, SessionsModel::kRole), QStringLiteral("forked worker"));
    QCOMPARE(text(0, SessionsModel::kExitCode), QStringLiteral("exit 0"));
    QCOMPARE(text(1, SessionsModel::kExitCode), QStringLiteral("forked worker, exit not observed"));
    QCOMPARE(describe_roles(model::job_view(rec->profile)), QStringLiteral("the root, 2 forked workers"));
    // A worker whose exit was recorded shows it; a root without one says it was not recorded.
    p.sessions[1].exit_code = 3;
    p.sessions[0].exit_code.reset();
    model.setRecording(make_recording(QStringLiteral("/tmp/roles.edodb"), p));
    QCOMPARE(text(1, SessionsModel::kExitCode), QStringLiteral("exit 3"));
    QCOMPARE(text(0, SessionsModel::kExitCode), QStringLiteral("exit not recorded"));
    // Ranks: named with their number, and counted as ranks.
    model::Profile ranks;
    for (int r = 0; r < 2; ++r) {
      model::Session s;
      s.id = r + 1;
      s.pid = 200 + r;
      s.parent_pid = 1;
      s.rank = r;
      s.command = "python3 ddp.py";
      ranks.sessions.push_back(s);
    }
    model.setRecording(make_recording(QStringLiteral("/tmp/ranks.edodb"), ranks));
    QVERIFY2(describe_roles(model::job_view(ranks)).contains(QStringLiteral("rank")), qPrintable(describe_roles(model::job_view(ranks))));
    QVERIFY(text(1, SessionsModel::kRole).startsWith(QStringLiteral("rank")));
  }

  // The tuner records its advice as reasons (edo/model/tune_reasons.h): `edo tune` words each
  // with its flag, the Tuner view with the field that sets the same option, and never a flag.
  void tunerReasonsInTheDashboardsWords() {
    using model::Reason;
    for (int code = 0; code <= static_cast<int>(Reason::kUnknownTargetDevice); ++code) {
      const model::TuneReason r{.code = static_cast<Reason>(code), .value = 0.02, .name = "host", .detail = "a, b"};
      const std::string command = model::command_words().say(r);
      const std::string dashboard = dashboard_words().say(r);
      QVERIFY2(command.find("--") != std::string::npos, command.c_str());  // each reason is advice the command words with a flag
      QVERIFY2(dashboard.find("--") == std::string::npos, dashboard.c_str());
    }
    QCOMPARE(QString::fromStdString(dashboard_words().say({.code = Reason::kOverMaxError, .value = 0.02})),
             QStringLiteral("over the Max error 0.02"));
    QCOMPARE(QString::fromStdString(model::command_words().say({.code = Reason::kOverMaxError, .value = 0.02})),
             QStringLiteral("over --max-error 0.02"));
    QCOMPARE(QString::fromStdString(dashboard_words().say({.code = Reason::kLargerTimeLimit, .name = "measures more"})),
             QStringLiteral("a larger Time limit measures more"));

    // A candidate's note as the tuner marks it: the Note column words it, the stored text keeps
    // the command's words; a note stored before reasons were marked reads as stored.
    auto r = std::make_shared<model::TuneResult>();
    model::TuneCandidate gated;
    gated.table = "t";
    gated.strategy = "int4";
    gated.note = "not timed: error 0.3 (on the reference rows), ";
    model::say(gated.note, gated.note_reasons, {.code = Reason::kOverMaxError, .value = 0.02});
    QCOMPARE(QString::fromStdString(gated.note), QStringLiteral("not timed: error 0.3 (on the reference rows), over --max-error 0.02"));
    model::TuneCandidate old = gated;
    old.note_reasons.clear();
    r->candidates = {gated, old};
    CandidatesModel candidates;
    candidates.setResult(r);
    QCOMPARE(candidates.data(candidates.index(0, CandidatesModel::kNote)).toString(),
             QStringLiteral("not timed: error 0.3 (on the reference rows), over the Max error 0.02"));
    QCOMPARE(candidates.data(candidates.index(1, CandidatesModel::kNote)).toString(), QString::fromStdString(old.note));

    // The summary: the run's notes and the verdict in the view's words.
    r->notes = {"no steps recorded", "max error 0.02 per table is the default (...): "};
    model::say_in_line(r->notes[1], r->note_reasons, 1, {.code = Reason::kChangeMaxError});
    r->complete = false;
    r->stop_reason = model::StopReason::kTimeLimit;
    r->time_limit_s = 60;
    const std::vector<std::string> command = tuner::summary_lines(*r), dashboard = tuner::summary_lines(*r, dashboard_words());
    QCOMPARE(command.size(), dashboard.size());
    std::string all_command, all_dashboard;
    for (size_t i = 0; i < command.size(); ++i) {
      all_command += command[i] + "\n";
      all_dashboard += dashboard[i] + "\n";
    }
    QVERIFY2(all_command.find("--max-error E to change it") != std::string::npos, all_command.c_str());
    QVERIFY2(all_command.find("stopped by --time-limit 60 s") != std::string::npos, all_command.c_str());
    QVERIFY2(all_dashboard.find("--") == std::string::npos, all_dashboard.c_str());
    QVERIFY2(all_dashboard.find("change it in the Max error field") != std::string::npos, all_dashboard.c_str());
    QVERIFY2(all_dashboard.find("stopped by the Time limit 60 s") != std::string::npos, all_dashboard.c_str());
    QVERIFY2(all_dashboard.find("note: no steps recorded\n") != std::string::npos, all_dashboard.c_str());
  }

  // The plan's rows on a hand-made result: the optimizer lever shown beside the strategy, a
  // tied table following its owner, an untuned table unchanged, savings negative when the
  // plan grows a table.
  void planModelShowsLeversTiesAndUntunedTables() {
    auto r = std::make_shared<model::TuneResult>();
    r->tables = {{"enc", 1000, 16, "fp32", 192000, 10, true, "", "synthetic", "adam"},
                 {"dec", 1000, 16, "fp32", 0, 10, true, "enc", "synthetic", "adam"},
                 {"small", 10, 4, "fp32", 160, 1, false, "", "synthetic", ""}};
    model::TuneCandidate fp16;
    fp16.table = "enc";
    fp16.strategy = "fp16";
    fp16.spec = "fp16";
    fp16.optimizer = "rowwise_adagrad";
    fp16.device_bytes = 36000;
    fp16.step_us = 2.5;
    fp16.error = 0.0002;
    fp16.measured = true;
    r->candidates = {fp16};
    model::TuneChoice enc{"enc", 0, "", 36000, 0, 2.0, "fp16: saves"};
    model::TuneChoice dec{"dec", 0, "enc", 0, 0, 0.5, "tied to enc"};
    model::TuneChoice small{"small", -1, "", 200, 0, 0, "not tuned"};
    r->choices = {enc, dec, small};
    r->feasible = true;
    PlanModel plan;
    plan.setResult(r);
    check_model(plan);
    QCOMPARE(plan.rowCount(), 3);
    QCOMPARE(plan.index(0, PlanModel::kStrategy).data().toString(), QStringLiteral("fp16+rowwise_adagrad(sparse)"));  // the whole change, as the CLI says it
    QCOMPARE(plan.index(0, PlanModel::kStrategy).data(SortRole).toString(), QStringLiteral("fp16"));
    QCOMPARE(plan.index(0, PlanModel::kSaved).data(SortRole).toDouble(), 156000.0);
    QCOMPARE(plan.index(1, PlanModel::kStrategy).data().toString(), QStringLiteral("shared (with enc)"));
    QCOMPARE(plan.index(2, PlanModel::kStrategy).data().toString(), QStringLiteral("unchanged"));
    QCOMPARE(plan.index(2, PlanModel::kStepTime).data().toString(), QStringLiteral("–"));
    QCOMPARE(plan.index(2, PlanModel::kSaved).data().toString(), QStringLiteral("-40 B"));
    CandidatesModel candidates;
    candidates.setResult(r);
    check_model(candidates);
    QCOMPARE(candidates.index(0, CandidatesModel::kStrategy).data().toString(), QStringLiteral("fp16+rowwise_adagrad(sparse)"));
    // An offload cache's hit rate: held out (replayed on the recorded order, issue 19) or
    // estimated, with the whole recording's in parentheses; the tooltip says which.
    model::TuneCandidate held = fp16, estimated = fp16;
    held.strategy = estimated.strategy = "offload";
    held.optimizer = estimated.optimizer = "";
    held.hit_rate = held.heldout_hit_rate = 0.0;
    held.recorded_hit_rate = 0.9;
    estimated.hit_rate = 0.75;
    estimated.recorded_hit_rate = 0.8;
    r->candidates = {fp16, held, estimated};
    candidates.setResult(r);
    QCOMPARE(candidates.index(1, CandidatesModel::kHitRate).data().toString(),
             format_share(0.0) + QStringLiteral(" (") + format_share(0.9) + QStringLiteral(")"));
    QVERIFY(candidates.index(1, CandidatesModel::kHitRate).data(Qt::ToolTipRole).toString().startsWith(QStringLiteral("held out")));
    QVERIFY(candidates.index(2, CandidatesModel::kHitRate).data(Qt::ToolTipRole).toString().startsWith(QStringLiteral("estimated")));
    // The policy headroom (issue 34): optimal minus FBGEMM's chosen algorithm, in points, with
    // every policy's held-out rate in the tooltip; "–" without replays and for other strategies.
    held.params = edo::model::params_from_text(R"({"cache_rows":100,"policy":"lru","cache_policy":"lfu","policy_headroom":0.125,)"
                       R"("policy_replays":{"cache_rows":100,"slots":128,"sample_rate":1,"lru":0.5,"lfu":0.625,)"
                       R"("fbgemm_lru":0.5,"fbgemm_lfu":0.625,"fbgemm_lru_prefetch":0.375,"optimal":0.75}})");
    r->candidates = {fp16, held, estimated};
    r->choices[0].candidate = 1;
    candidates.setResult(r);
    QCOMPARE(candidates.index(1, CandidatesModel::kHeadroom).data().toString(), QStringLiteral("12.5 pts (LFU)"));
    QCOMPARE(candidates.index(1, CandidatesModel::kHeadroom).data(SortRole).toDouble(), 0.125);
    const QString tip = candidates.index(1, CandidatesModel::kHeadroom).data(Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains(QStringLiteral("128 slots")) && tip.contains(QStringLiteral("optimal ") + format_share(0.75)) &&
                 tip.contains(QStringLiteral("LRU with prefetch ") + format_share(0.375)),
             qPrintable(tip));
    QCOMPARE(candidates.index(2, CandidatesModel::kHeadroom).data().toString(), QStringLiteral("–"));
    QCOMPARE(candidates.index(0, CandidatesModel::kHeadroom).data().toString(), QStringLiteral("–"));
    plan.setResult(r);
    QCOMPARE(plan.index(0, PlanModel::kHeadroom).data().toString(), QStringLiteral("12.5 pts (LFU)"));
    QCOMPARE(plan.index(1, PlanModel::kHeadroom).data().toString(), QStringLiteral("–"));  // tied: the owner's
    // The tiers (issue 35 point 2): each choice's and candidate's tier (model::tier_of) and SSD
    // bytes; a table kept as recorded is on the device.
    QCOMPARE(plan.index(0, PlanModel::kTier).data().toString(), QStringLiteral("host"));
    QCOMPARE(plan.index(1, PlanModel::kTier).data().toString(), QStringLiteral("device"));  // its candidate's (fp16)
    QCOMPARE(plan.index(2, PlanModel::kTier).data().toString(), QStringLiteral("device"));
    model::TuneCandidate ssd = fp16;
    ssd.strategy = "ssd";
    ssd.optimizer = "";
    ssd.ssd_bytes = uint64_t{3} << 30;
    r->candidates = {fp16, held, estimated, ssd};
    r->choices[0].candidate = 3;
    r->choices[0].ssd_bytes = ssd.ssd_bytes;
    plan.setResult(r);
    candidates.setResult(r);
    check_model(plan);
    check_model(candidates);
    QCOMPARE(plan.index(0, PlanModel::kTier).data().toString(), QStringLiteral("ssd"));
    QCOMPARE(plan.index(0, PlanModel::kSsd).data().toString(), format_bytes(uint64_t{3} << 30));
    QCOMPARE(plan.index(0, PlanModel::kSsd).data(SortRole).toULongLong(), qulonglong{3} << 30);
    QCOMPARE(plan.index(2, PlanModel::kSsd).data(SortRole).toULongLong(), qulonglong{0});
    QCOMPARE(candidates.index(3, CandidatesModel::kTier).data().toString(), QStringLiteral("ssd"));
    QCOMPARE(candidates.index(1, CandidatesModel::kTier).data().toString(), QStringLiteral("host"));
    QCOMPARE(candidates.index(0, CandidatesModel::kTier).data().toString(), QStringLiteral("device"));
    QCOMPARE(candidates.index(3, CandidatesModel::kSsd).data(SortRole).toULongLong(), qulonglong{3} << 30);
    QCOMPARE(candidates.headerData(CandidatesModel::kSsd, Qt::Horizontal).toString(), QStringLiteral("SSD"));
    QCOMPARE(plan.headerData(PlanModel::kTier, Qt::Horizontal).toString(), QStringLiteral("Tier"));
    candidates.setResult(nullptr);
    QCOMPARE(candidates.rowCount(), 0);
  }

  // Running edo tune from the dashboard: progress, the result stored like `edo tune` stores
  // it, and Cancel keeping what was measured.
  void tuneRunnerMeasuresSavesAndCancels() {
    const QString path = temp_dir() + QStringLiteral("/to-tune.edodb");
    Run s = run(edo_bin(), {QStringLiteral("synth"), QStringLiteral("-o"), path, QStringLiteral("--tables"), QStringLiteral("3"),
                            QStringLiteral("--rows"), QStringLiteral("4000"), QStringLiteral("--lookups"), QStringLiteral("20000")});
    QCOMPARE(s.exit_code, 0);
    tuner::TuneOptions o;
    o.budget_bytes = 2 << 20;
    o.backend = "cpu";
    o.strategies = "fp16,int8,int4";
    o.max_error = std::numeric_limits<double>::infinity();  // every candidate timed (the default keeps int4 out)
    o.reps = 1;
    TuneRunner runner;
    QSignalSpy progress(&runner, &TuneRunner::progress);
    QSignalSpy finished(&runner, &TuneRunner::finished);
    QSignalSpy failed(&runner, &TuneRunner::failed);
    runner.start(path, o);
    QVERIFY(runner.busy());
    QVERIFY(finished.wait(240'000));
    QCOMPARE(failed.count(), 0);
    QVERIFY(!runner.busy());
    auto result = finished.at(0).at(0).value<TuneResultPtr>();
    QCOMPARE(finished.at(0).at(1).toString(), QString());  // saved
    QVERIFY(result->complete);
    QCOMPARE(result->candidates_measured, result->candidates_total);
    QVERIFY(result->feasible);
    QVERIFY(progress.count() >= 1);
    qulonglong last = 0;
    for (const auto& args : progress) {
      QVERIFY(args.at(0).toULongLong() >= last);
      last = args.at(0).toULongLong();
      QCOMPARE(args.at(1).toULongLong(), qulonglong(result->candidates_total));
    }
    {
      db::ProfileStore store(path.toStdString(), db::ProfileStore::Mode::kReadOnly);
      auto stored = db::load_latest_tune_result(store);
      QVERIFY(stored.has_value());
      QCOMPARE(stored->run_id, result->run_id);
      QCOMPARE(stored->plan_device_bytes, result->plan_device_bytes);
    }
    // The item models show it.
    PlanModel plan;
    plan.setResult(result);
    QCOMPARE(plan.rowCount(), 3);
    check_model(plan);
    CandidatesModel candidates;
    candidates.setResult(result);
    QCOMPARE(candidates.rowCount(), int(result->candidates.size()));
    check_model(candidates);

    // Cancel at the first progress report: the tuner stops after that candidate.
    TuneRunner again;
    QSignalSpy done(&again, &TuneRunner::finished);
    connect(&again, &TuneRunner::progress, &again, &TuneRunner::cancel);
    o.strategies = "";
    again.start(path, o);
    QVERIFY(done.wait(240'000));
    auto stopped = done.at(0).at(0).value<TuneResultPtr>();
    QVERIFY(!stopped->complete);
    QCOMPARE(std::string(edo::model::to_string(stopped->stop_reason)), std::string("cancelled"));
    QVERIFY(stopped->candidates_measured < stopped->candidates_total);

    // A budget the tuner cannot read fails in one line; so does a missing file.
    TuneRunner bad;
    QSignalSpy bad_failed(&bad, &TuneRunner::failed);
    bad.start(temp_dir() + QStringLiteral("/no-such.edodb"), o);
    QVERIFY(bad_failed.count() > 0 || bad_failed.wait(240'000));
    QVERIFY(bad_failed.at(0).at(0).toString().contains(QStringLiteral("no such file")));
  }

  void loaderReportsBadFilesInOneLine_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("needle");
    const QString dir = temp_dir();
    QTest::newRow("missing") << dir + QStringLiteral("/missing.edodb") << QStringLiteral("no such file");
    {
      QFile f(dir + QStringLiteral("/empty.edodb"));
      QVERIFY(f.open(QIODevice::WriteOnly));
    }
    QTest::newRow("empty") << dir + QStringLiteral("/empty.edodb") << QStringLiteral("empty file");
    {
      QFile f(dir + QStringLiteral("/text.edodb"));
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray("this is a text file, not a database\n").repeated(200));
    }
    QTest::newRow("text") << dir + QStringLiteral("/text.edodb") << QStringLiteral("not an edo database");
    {
      SQLite::Database db((dir + QStringLiteral("/foreign.sqlite")).toStdString(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
      db.exec("CREATE TABLE t (x INTEGER)");
    }
    QTest::newRow("foreign sqlite") << dir + QStringLiteral("/foreign.sqlite") << QStringLiteral("not an edo database");
    const QString small = synth_recording({QStringLiteral("--tables"), QStringLiteral("1"), QStringLiteral("--rows"),
                                           QStringLiteral("100"), QStringLiteral("--lookups"), QStringLiteral("500")});
    QFile::copy(small, dir + QStringLiteral("/newer.edodb"));
    {
      SQLite::Database db((dir + QStringLiteral("/newer.edodb")).toStdString(), SQLite::OPEN_READWRITE);
      db.exec("UPDATE edo_meta SET value = '999' WHERE key = 'schema_version'");
    }
    QTest::newRow("newer schema") << dir + QStringLiteral("/newer.edodb") << QStringLiteral("newer edo");
    QFile::copy(small, dir + QStringLiteral("/badblob.edodb"));
    {
      SQLite::Database db((dir + QStringLiteral("/badblob.edodb")).toStdString(), SQLite::OPEN_READWRITE);
      db.exec("UPDATE table_stats SET aggregate = x'00112233'");
    }
    QTest::newRow("corrupt statistics") << dir + QStringLiteral("/badblob.edodb") << QStringLiteral("do not decode");
    QTest::newRow("a folder") << dir << QStringLiteral("is a directory");
  }

  void loaderReportsBadFilesInOneLine() {
    QFETCH(QString, path);
    QFETCH(QString, needle);
    RecordingLoader loader;
    QSignalSpy failed(&loader, &RecordingLoader::failed);
    QSignalSpy loaded(&loader, &RecordingLoader::loaded);
    loader.open(path);
    QVERIFY(failed.count() > 0 || failed.wait(240'000));
    QCOMPARE(loaded.count(), 0);
    const QString reason = failed.at(0).at(1).toString();
    QVERIFY2(reason.contains(needle), qPrintable(reason));
    QVERIFY2(reason.contains(path), qPrintable(reason));
    QVERIFY2(!reason.contains(QLatin1Char('\n')), qPrintable(reason));
    QVERIFY(!loader.busy());
  }
};

EDO_GUI_TEST_MAIN(ModelTests, QGuiApplication)
#include "gui_model_test.moc"
