// How fast the dashboard opens a large recording, measured as a user meets it.
//
// The recording: 100 tables x 10M rows (Zipf lookups through the real statistics engine,
// 1M per table), a device memory timeline of 200K events, kernels and NVTX ranges: a fake
// GPU recording (tests/fixtures/fake_gpu_recording), made once and kept in --data.
//
// Each repetition is a fresh process (this binary re-executes itself) that opens the file in
// edo-dashboard's window on the offscreen platform and measures
//  * first_paint_s: from the process's start (kernel start time, so loading Qt's libraries
//    counts) to the first paint of the overview's memory chart showing the file's timeline
//    (the numbers above it are painted before);
//  * max_ui_stall_ms: the longest gap between ticks of a 2 ms timer on the UI thread from
//    the moment the file is opened until every view has its statistics (the loader works on
//    another thread; a long gap means the UI froze);
//  * max_ui_busy_ms: the most CPU time the UI thread itself used between two ticks: the
//    stall the dashboard's own work causes. On an idle machine it is the stall; on a busy one
//    the stall also holds the time the thread waited for a core, and this tells them apart;
//  * loaded_s: from the process's start until the statistics of every table are in.
// The load average is printed with the figures: other work on the machine lengthens stalls.
// Anchor: `edo report --json` of the same file (the terminal's time to the same numbers).
// Targets: first paint < 1 s, no stall > 50 ms.
#include <QApplication>
#include <QChartView>
#include <QDir>
#include <QElapsedTimer>
#include <QEvent>
#include <QFileInfo>
#include <QProcess>
#include <QThreadPool>
#include <QTimer>

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fake_gpu_recording.h"
#include "main_window.h"
#include "overview_view.h"

namespace {

struct Options {
  int tables = 100;
  uint64_t rows = 10'000'000;
  uint64_t lookups = 1'000'000;
  uint64_t memory_events = 200'000;
  int reps = 3;
  std::string data;
  std::string child_file;  // set in a child process: open this file and measure
};

// Seconds since this process started (its start time in /proc, against CLOCK_BOOTTIME).
double since_process_start() {
  std::ifstream stat("/proc/self/stat");
  std::string line;
  std::getline(stat, line);
  // Field 22 (starttime, clock ticks since boot) comes after the ")" that ends the command.
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) rest >> field;
  const double start = std::stod(field) / static_cast<double>(sysconf(_SC_CLK_TCK));
  timespec now;
  clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9 - start;
}

// Records the first paint of a widget after arm().
class PaintWatch : public QObject {
 public:
  bool armed = false;
  double painted_at = -1;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (armed && painted_at < 0 && event->type() == QEvent::Paint) painted_at = since_process_start();
    return QObject::eventFilter(watched, event);
  }
};

int run_child(const Options& o, int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  edo::gui::MainWindow window(false);
  window.resize(1280, 800);
  window.show();
  QCoreApplication::processEvents();

  QChartView* chart = window.overviewView()->findChild<QChartView*>();
  PaintWatch watch;
  chart->viewport()->installEventFilter(&watch);
  // Armed once the chart holds the file's timeline (it is built in an event of its own).
  QObject::connect(window.overviewView(), &edo::gui::OverviewView::memoryChartShown, [&] { watch.armed = true; });

  // The UI thread's heartbeat.
  QElapsedTimer clock;
  qint64 last = 0, max_gap = 0;
  auto thread_cpu_ns = [] {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<qint64>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  };
  qint64 last_cpu = 0, max_busy = 0;
  QTimer beat;
  beat.setTimerType(Qt::PreciseTimer);
  beat.setInterval(2);
  const bool verbose = !qEnvironmentVariableIsEmpty("EDO_BENCH_VERBOSE");
  QObject::connect(&beat, &QTimer::timeout, [&] {
    const qint64 now = clock.nsecsElapsed();
    if (verbose && now - last > 10'000'000)
      std::fprintf(stderr, "  stall %.1f ms ending at %.1f ms\n", (now - last) / 1e6, now / 1e6);
    max_gap = std::max(max_gap, now - last);
    last = now;
    const qint64 cpu = thread_cpu_ns();
    max_busy = std::max(max_busy, cpu - last_cpu);
    last_cpu = cpu;
  });
  if (verbose) {
    QObject::connect(&window, &edo::gui::MainWindow::outlineShown,
                     [&] { std::fprintf(stderr, "  outline shown at %.1f ms\n", clock.nsecsElapsed() / 1e6); });
    QObject::connect(&window, &edo::gui::MainWindow::recordingLoaded,
                     [&] { std::fprintf(stderr, "  loaded at %.1f ms\n", clock.nsecsElapsed() / 1e6); });
  }
  double loaded_at = -1;
  bool failed = false;
  QObject::connect(&window, &edo::gui::MainWindow::recordingLoaded, [&] {
    loaded_at = since_process_start();
    // Keep beating a little: the views redraw with the statistics after this signal.
    QTimer::singleShot(300, &app, &QCoreApplication::quit);
  });
  QObject::connect(&window, &edo::gui::MainWindow::loadFailed, [&](const QString& why) {
    std::fprintf(stderr, "bench_dashboard_open: %s\n", qPrintable(why));
    failed = true;
    QCoreApplication::quit();
  });
  clock.start();
  last_cpu = thread_cpu_ns();
  beat.start();
  window.openFile(QString::fromStdString(o.child_file));
  QApplication::exec();
  QThreadPool::globalInstance()->waitForDone();
  if (failed || watch.painted_at < 0 || loaded_at < 0) return 1;
  std::printf("%.4f %.3f %.4f %.3f\n", watch.painted_at, static_cast<double>(max_gap) / 1e6, loaded_at, static_cast<double>(max_busy) / 1e6);
  return 0;
}

// The 1-minute load average (from /proc/loadavg): how busy the machine was.
std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string one;
  f >> one;
  return one.empty() ? std::string("unknown") : one;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int usage(const char* why) {
  std::fprintf(stderr, "bench_dashboard_open: %s (options: --tables N --rows R --lookups L --memory-events E --reps K --data DIR)\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.data = (QFileInfo(QString::fromLocal8Bit(argv[0])).absolutePath() + QStringLiteral("/../bench-data")).toStdString();
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char* name) -> const char* {
      if (std::strcmp(argv[i], name) != 0) return nullptr;
      if (i + 1 >= argc) return nullptr;
      return argv[++i];
    };
    const char* v;
    if ((v = value("--tables"))) o.tables = std::atoi(v);
    else if ((v = value("--rows"))) o.rows = std::strtoull(v, nullptr, 10);
    else if ((v = value("--lookups"))) o.lookups = std::strtoull(v, nullptr, 10);
    else if ((v = value("--memory-events"))) o.memory_events = std::strtoull(v, nullptr, 10);
    else if ((v = value("--reps"))) o.reps = std::atoi(v);
    else if ((v = value("--data"))) o.data = v;
    else if ((v = value("--child"))) o.child_file = v;
    else return usage((std::string("unknown argument ") + argv[i]).c_str());
  }
  if (o.tables < 1 || o.rows < 16 || o.lookups < 1 || o.reps < 1) return usage("every count must be positive");
  if (!o.child_file.empty()) return run_child(o, argc, argv);

  // The recording, made once per shape.
  QDir().mkpath(QString::fromStdString(o.data));
  const std::string file = o.data + "/dashboard-" + std::to_string(o.tables) + "x" + std::to_string(o.rows) + "-" +
                           std::to_string(o.lookups) + "-" + std::to_string(o.memory_events) + ".edodb";
  if (!QFileInfo::exists(QString::fromStdString(file))) {
    std::printf("writing %s (once; kept for later runs)...\n", file.c_str());
    std::fflush(stdout);
    edo::gui::fake::FakeGpuRecordingOptions f;
    f.tables = o.tables;
    f.rows = o.rows;
    f.same_rows = true;
    f.lookups = o.lookups;
    f.memory_events = o.memory_events;
    f.steps = 500;
    f.duration_s = 300;
    f.tie_last_table = false;
    const std::string partial = file + ".partial";
    try {
      edo::gui::fake::write_fake_gpu_recording(partial, f);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_dashboard_open: %s\n", e.what());
      return 1;
    }
    std::rename(partial.c_str(), file.c_str());
  }
  std::printf("dashboard_open: %d tables x %llu rows, %llu lookups per table, %llu memory events, %lld MiB file, %d reps\n",
              o.tables, static_cast<unsigned long long>(o.rows), static_cast<unsigned long long>(o.lookups),
              static_cast<unsigned long long>(o.memory_events), static_cast<long long>(QFileInfo(QString::fromStdString(file)).size() >> 20), o.reps);

  std::vector<double> paint, stall, loaded, report, busy;
  for (int r = 0; r < o.reps; ++r) {
    QProcess child;
    child.start(QString::fromLocal8Bit(argv[0]), {QStringLiteral("--child"), QString::fromStdString(file)});
    if (!child.waitForFinished(600'000) || child.exitCode() != 0) {
      std::fprintf(stderr, "bench_dashboard_open: the measuring process failed: %s\n", child.readAllStandardError().constData());
      return 1;
    }
    double p = 0, s = 0, l = 0, b = 0;
    if (std::sscanf(child.readAllStandardOutput().constData(), "%lf %lf %lf %lf", &p, &s, &l, &b) != 4) return 1;
    paint.push_back(p);
    busy.push_back(b);
    stall.push_back(s);
    loaded.push_back(l);
    // Anchor, interleaved with the dashboard runs: the terminal report of the same file.
    QElapsedTimer t;
    t.start();
    QProcess cli;
    cli.setStandardOutputFile(QProcess::nullDevice());
    cli.start(QStringLiteral(EDO_BIN), {QStringLiteral("report"), QStringLiteral("--json"), QString::fromStdString(file)});
    if (!cli.waitForFinished(600'000) || cli.exitCode() != 0) return 1;
    report.push_back(static_cast<double>(t.nsecsElapsed()) / 1e9);
    std::printf("  rep %d: first paint %.3f s, max UI stall %.1f ms (UI thread busy %.1f ms of it at most), all statistics %.3f s; "
                "edo report --json %.3f s; load average %s\n",
                r + 1, p, s, b, l, report.back(), load_average().c_str());
  }
  const double mp = median(paint), ms = *std::max_element(stall.begin(), stall.end()), ml = median(loaded), mr = median(report);
  std::printf("anchor: edo report --json of the same file %.3f s (median)\n", mr);
  std::printf("first_paint_s %.3f (median; target < 1.0: %s); ratio to anchor %.3f\n", mp, mp < 1.0 ? "met" : "MISSED", mp / mr);
  std::printf("max_ui_stall_ms %.1f (worst of %d; target < 50: %s)\n", ms, o.reps, ms < 50.0 ? "met" : "MISSED");
  std::printf("max_ui_busy_ms %.1f (worst of %d: the UI thread's own CPU time between two ticks; about the stall on an idle machine)\n",
              *std::max_element(busy.begin(), busy.end()), o.reps);
  std::printf("all_statistics_s %.3f (median); ratio to anchor %.3f\n", ml, ml / mr);
  return 0;
}
