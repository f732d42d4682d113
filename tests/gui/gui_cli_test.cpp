// edo-dashboard and `edo dashboard` as a user runs them from a terminal: --screenshot of
// every view on synth, fake GPU and dlrm_like.py recordings (PNGs of the asked size, not
// blank, each view different), and the one-line errors and exit codes of bad input.
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QSet>
#include <QTest>

#include "gui_test_support.h"

using namespace edo::gui::testing;

namespace {

QProcessEnvironment headless_env() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.remove(QStringLiteral("QT_QPA_PLATFORM"));  // --screenshot must choose offscreen itself
  env.remove(QStringLiteral("DISPLAY"));
  env.remove(QStringLiteral("WAYLAND_DISPLAY"));
  return env;
}

Run dashboard(const QStringList& args) { return run(dashboard_bin(), args, headless_env(), 120'000); }

QString out_png(const QString& name) { return temp_dir() + QLatin1Char('/') + name + QStringLiteral(".png"); }

// Distinct colours in a coarse sample: a blank or single-colour image has very few.
int colours(const QImage& img) {
  QSet<QRgb> seen;
  for (int y = 0; y < img.height(); y += 3)
    for (int x = 0; x < img.width(); x += 3) seen.insert(img.pixel(x, y));
  return seen.size();
}

void expect_one_line_error(const Run& r, int code, const QString& needle) {
  QCOMPARE(r.exit_code, code);
  const QString err = QString::fromUtf8(r.err).trimmed();
  QVERIFY2(err.contains(needle), qPrintable(err));
  QVERIFY2(!err.contains(QLatin1Char('\n')), qPrintable(err));
}

QImage screenshot(const QString& file, const QString& view, const QString& name, const QString& size = QStringLiteral("1280x800")) {
  const QString png = out_png(name);
  QFile::remove(png);
  Run r = dashboard({file, QStringLiteral("--screenshot"), png, QStringLiteral("--view"), view, QStringLiteral("--size"), size});
  if (r.exit_code != 0) qWarning("edo-dashboard --view %s failed (%d): %s", qPrintable(view), r.exit_code, r.err.constData());
  return QImage(png);
}

void every_view_renders(const QString& file, const QString& other, const QString& table, const QString& prefix) {
  const QStringList views = {QStringLiteral("overview"), QStringLiteral("tables"), QStringLiteral("table:") + table,
                             QStringLiteral("kernels"), QStringLiteral("tuner"), QStringLiteral("diff:") + other};
  QList<QImage> images;
  for (const QString& view : views) {
    QImage img = screenshot(file, view, prefix + QLatin1Char('-') + QString(view).replace(QLatin1Char(':'), QLatin1Char('_')).replace(QLatin1Char('/'), QLatin1Char('_')));
    QVERIFY2(!img.isNull(), qPrintable(view));
    QCOMPARE(img.size(), QSize(1280, 800));
    QVERIFY2(colours(img) > 20, qPrintable(QStringLiteral("%1: %2 colours").arg(view).arg(colours(img))));
    for (int i = 0; i < images.size(); ++i) QVERIFY2(images[i] != img, qPrintable(views[i] + QStringLiteral(" == ") + view));
    images << img;
  }
}

}  // namespace

class CliTests : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void everyViewOfASynthRecording() {
    const QString a = synth_recording({QStringLiteral("--tables"), QStringLiteral("4"), QStringLiteral("--rows"), QStringLiteral("50000"),
                                       QStringLiteral("--lookups"), QStringLiteral("80000")});
    const QString b = synth_recording({QStringLiteral("--tables"), QStringLiteral("5"), QStringLiteral("--rows"), QStringLiteral("50000"),
                                       QStringLiteral("--lookups"), QStringLiteral("40000"), QStringLiteral("--zipf"), QStringLiteral("0.8")});
    every_view_renders(a, b, QStringLiteral("synth.table_2"), QStringLiteral("synth"));
  }
  void everyViewOfAFakeGpuRecording() {
    every_view_renders(fake_recording(2, 9), fake_recording(1, 0), QStringLiteral("model.sparse.emb_shared_head"), QStringLiteral("fake"));
  }
  void everyViewOfDlrmUnderEdoRecord() {
    QString why;
    const QString a = dlrm_recording(&why);
    if (a.isEmpty()) QSKIP(qPrintable(why));
    every_view_renders(a, fake_recording(1, 0), QStringLiteral("sparse.item"), QStringLiteral("dlrm"));
  }
  void tunerOfATunedRecording() {
    QJsonObject plan;
    const QString path = tuned_recording(&plan);
    QImage tuner = screenshot(path, QStringLiteral("tuner"), QStringLiteral("tuned-tuner"));
    QImage overview = screenshot(path, QStringLiteral("overview"), QStringLiteral("tuned-overview"));
    QVERIFY(!tuner.isNull() && colours(tuner) > 20);
    QVERIFY(tuner != overview);
  }
  // The Ranks view of a job of 2 nodes x 2 ranks: rendered, and not the view of a recording
  // without ranks (which says where ranks come from) nor another view.
  void ranksViewOfAMultiRankJob() {
    const QString job = ranks_recording();
    const QImage ranks = screenshot(job, QStringLiteral("ranks"), QStringLiteral("ranks-ranks"));
    const QImage overview = screenshot(job, QStringLiteral("overview"), QStringLiteral("ranks-overview"));
    const QImage none = screenshot(fake_recording(1, 0), QStringLiteral("ranks"), QStringLiteral("ranks-none"));
    QVERIFY(!ranks.isNull() && !overview.isNull() && !none.isNull());
    QCOMPARE(ranks.size(), QSize(1280, 800));
    QVERIFY2(colours(ranks) > 20, qPrintable(QStringLiteral("%1 colours").arg(colours(ranks))));
    QVERIFY(ranks != overview);
    QVERIFY(ranks != none);
  }
  void sizeIsHonoured() {
    QImage img = screenshot(fake_recording(1, 0), QStringLiteral("overview"), QStringLiteral("small"), QStringLiteral("900x600"));
    QCOMPARE(img.size(), QSize(900, 600));
  }
  void edoDashboardLaunchesIt() {
    const QString png = out_png(QStringLiteral("via-edo"));
    Run r = run(edo_bin(), {QStringLiteral("dashboard"), fake_recording(1, 0), QStringLiteral("--screenshot"), png, QStringLiteral("--view"),
                            QStringLiteral("tables")},
                headless_env());
    QCOMPARE(r.exit_code, 0);
    QCOMPARE(QImage(png).size(), QSize(1280, 800));
  }

  void errors_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("needle");
    const QString ok = fake_recording(1, 0);
    const QString png = out_png(QStringLiteral("error"));
    const QString missing = temp_dir() + QStringLiteral("/missing.edodb");
    QFile text(temp_dir() + QStringLiteral("/notes.edodb"));
    QVERIFY(text.open(QIODevice::WriteOnly));
    text.write(QByteArray("not a database\n").repeated(400));
    text.close();
    QTest::newRow("missing file") << QStringList{missing, QStringLiteral("--screenshot"), png} << 1 << QStringLiteral("no such file");
    QTest::newRow("not a database") << QStringList{text.fileName(), QStringLiteral("--screenshot"), png} << 1 << QStringLiteral("not an edo database");
    QTest::newRow("unknown table") << QStringList{ok, QStringLiteral("--screenshot"), png, QStringLiteral("--view"), QStringLiteral("table:nope")} << 1
                                   << QStringLiteral("no table named 'nope' (tables: model.sparse.emb_0");
    QTest::newRow("diff with a missing file") << QStringList{ok, QStringLiteral("--screenshot"), png, QStringLiteral("--view"), QStringLiteral("diff:") + missing}
                                              << 1 << QStringLiteral("no such file");
    QTest::newRow("unwritable output") << QStringList{ok, QStringLiteral("--screenshot"), temp_dir() + QStringLiteral("/no/such/dir/x.png")} << 1
                                       << QStringLiteral("cannot write the PNG");
    QTest::newRow("unknown view") << QStringList{ok, QStringLiteral("--screenshot"), png, QStringLiteral("--view"), QStringLiteral("charts")} << 2
                                  << QStringLiteral("unknown view 'charts' (use overview, tables, table:NAME, kernels, ranks, tuner or diff:OTHER)");
    QTest::newRow("diff without a file") << QStringList{ok, QStringLiteral("--screenshot"), png, QStringLiteral("--view"), QStringLiteral("diff")} << 2
                                         << QStringLiteral("diff:OTHER");
    QTest::newRow("bad size") << QStringList{ok, QStringLiteral("--screenshot"), png, QStringLiteral("--size"), QStringLiteral("big")} << 2
                              << QStringLiteral("not WIDTHxHEIGHT");
    QTest::newRow("size too small") << QStringList{ok, QStringLiteral("--screenshot"), png, QStringLiteral("--size"), QStringLiteral("500x300")} << 2
                                    << QStringLiteral("outside");
    QTest::newRow("screenshot without a file") << QStringList{QStringLiteral("--screenshot"), png} << 2 << QStringLiteral("needs a recording");
    QTest::newRow("unknown option") << QStringList{ok, QStringLiteral("--frobnicate")} << 2 << QStringLiteral("frobnicate");
    QTest::newRow("two files") << QStringList{ok, ok} << 2 << QStringLiteral("one recording at a time");
    QTest::newRow("no display") << QStringList{ok} << 1 << QStringLiteral("no display");
  }
  void errors() {
    QFETCH(QStringList, args);
    QFETCH(int, code);
    QFETCH(QString, needle);
    expect_one_line_error(dashboard(args), code, needle);
  }

  void edoDashboardErrors() {
    // A bad file is named by edo itself, before any window.
    expect_one_line_error(run(edo_bin(), {QStringLiteral("dashboard"), temp_dir() + QStringLiteral("/missing.edodb")}, headless_env()), 1,
                          QStringLiteral("no such file"));
    expect_one_line_error(run(edo_bin(), {QStringLiteral("dashboard"), fake_recording(1, 0), QStringLiteral("--view"), QStringLiteral("tables")},
                              headless_env()),
                          2, QStringLiteral("--view and --size go with --screenshot"));
    // An edo without the dashboard beside it (built without Qt) says so.
    const QString lone = temp_dir() + QStringLiteral("/lone");
    QVERIFY(QDir().mkpath(lone));
    QFile::remove(lone + QStringLiteral("/edo"));
    QVERIFY(QFile::copy(edo_bin(), lone + QStringLiteral("/edo")));
    expect_one_line_error(run(lone + QStringLiteral("/edo"), {QStringLiteral("dashboard"), fake_recording(1, 0)}, headless_env()), 1,
                          QStringLiteral("the dashboard is not part of this build"));
  }

  void helpAndVersion() {
    Run help = dashboard({QStringLiteral("--help")});
    QCOMPARE(help.exit_code, 0);
    QVERIFY(help.out.contains("--screenshot"));
    // The program's name, not Qt's placeholder for a parser without an application object.
    QVERIFY2(help.out.startsWith("Usage: edo-dashboard ") && !help.out.contains("<executable_name>"), help.out.constData());
    // Which file of a comparison is which (Qt wraps the line).
    QVERIFY(help.out.simplified().contains("as the recording before (FILE is after)"));
    Run version = dashboard({QStringLiteral("--version")});
    QCOMPARE(version.exit_code, 0);
    QVERIFY(version.out.startsWith("edo-dashboard "));
  }
};

EDO_GUI_TEST_MAIN(CliTests, QCoreApplication)
#include "gui_cli_test.moc"
