// What the dashboard's tests share: running edo's commands, the recordings they test on
// (made once per test process in a temporary folder), and `edo report --json` of a file.
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace edo::gui::testing {

struct Run {
  int exit_code = -1;
  QByteArray out;
  QByteArray err;
};
Run run(const QString& program, const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment(),
        int timeout_ms = 300'000);

QString edo_bin();
QString dashboard_bin();
QString source_dir();
QString temp_dir();  // removed when the test process exits

// `edo synth` with these arguments, written once per distinct argument list.
QString synth_recording(const QStringList& args);
// A fake GPU recording (fake_gpu_recording.h): 1 or 2 processes, some dropped events.
QString fake_recording(int sessions, uint64_t dropped = 0);
// A fake GPU recording whose process ended without its final flush (the loss counter
// "ended_without_final_flush", no dropped events).
QString fake_recording_without_final_flush();
// A merged recording of a job of 2 nodes x 2 ranks (issue 22): each rank reads "emb.shared"
// (rank r: 1000 * (r + 1) lookups) and its node's "emb.node<N>" table, with a memory timeline
// per rank (peak: (r + 1) MiB). Written once.
QString ranks_recording();
// examples/dlrm_like.py recorded under `edo record`; empty with *why set when this machine
// has no python3 with torch (the test then skips).
QString dlrm_recording(QString* why, const QStringList& script_args = {});

// A small `edo synth` recording that `edo tune --backend cpu --strategies fp16,int8` has tuned
// (a few seconds); *plan receives the command's --json output (edo.plan/1).
QString tuned_recording(QJsonObject* plan);
// A recording for the TorchRec export, tuned by `edo tune --backend cpu --strategies
// fp16,offload`, with the PyTorch hook's TorchRec note for table "synth.table_0" (config "t0",
// two features with their lookups and bags). One process (`edo synth`: its miss curves are held
// out, replayed from its ordered samples), or two processes' recordings merged by `edo merge`
// (each table's view merges two tables; the curves are the recorded ones).
QString torchrec_recording(int processes);

QJsonObject report_json(const QString& path, int top_rows = 0);
QJsonObject diff_json(const QString& before, const QString& after);

}  // namespace edo::gui::testing

// main() of a dashboard QTest: the offscreen platform unless one is set, fixed 96 dpi.
#define EDO_GUI_TEST_MAIN(TestClass, AppClass)                                            \
  int main(int argc, char** argv) {                                                       \
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen"); \
    QCoreApplication::setAttribute(Qt::AA_Use96Dpi);                                      \
    AppClass app(argc, argv);                                                             \
    app.setOrganizationName(QStringLiteral("edo-tests"));                                 \
    app.setApplicationName(QStringLiteral(#TestClass));                                   \
    TestClass tc;                                                                         \
    QTEST_SET_MAIN_SOURCE_PATH                                                            \
    return QTest::qExec(&tc, argc, argv);                                                 \
  }
