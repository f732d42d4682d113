#include "gui_test_support.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QHash>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>

#include <memory>
#include <tuple>
#include <vector>

#include "edo/db/profile_store.h"
#include "edo/model/profile.h"
#include "edo/stats/table_stats.h"
#include "fake_gpu_recording.h"

namespace edo::gui::testing {

Run run(const QString& program, const QStringList& args, const QProcessEnvironment& env, int timeout_ms) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
  Run r;
  if (!p.waitForStarted(240'000)) {
    r.err = ("cannot start " + program).toUtf8();
    return r;
  }
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = ("timed out: " + program).toUtf8();
    return r;
  }
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : 128 + 9;
  r.out = p.readAllStandardOutput();
  r.err = p.readAllStandardError();
  return r;
}

QString edo_bin() { return QStringLiteral(EDO_BIN); }
QString dashboard_bin() { return QStringLiteral(EDO_DASHBOARD_BIN); }
QString source_dir() { return QStringLiteral(EDO_SOURCE_DIR); }

QString temp_dir() {
  static std::unique_ptr<QTemporaryDir> dir = std::make_unique<QTemporaryDir>(QDir::tempPath() + QStringLiteral("/edo-gui-test-XXXXXX"));
  return dir->path();
}

namespace {
QHash<QString, QString>& made() {
  static QHash<QString, QString> files;
  return files;
}
}  // namespace

QString synth_recording(const QStringList& args) {
  const QString key = QStringLiteral("synth ") + args.join(QLatin1Char(' '));
  if (made().contains(key)) return made()[key];
  const QString path = temp_dir() + QStringLiteral("/synth-%1.edodb").arg(made().size());
  Run r = run(edo_bin(), QStringList{QStringLiteral("synth"), QStringLiteral("-o"), path} + args);
  if (r.exit_code != 0) qFatal("edo synth failed: %s", r.err.constData());
  made()[key] = path;
  return path;
}

QString ranks_recording() {
  const QString key = QStringLiteral("ranks");
  if (made().contains(key)) return made()[key];
  const QString path = temp_dir() + QStringLiteral("/ranks.edodb");
  model::Profile p;
  for (int64_t rank = 0; rank < 4; ++rank) {
    model::Session s;
    s.id = rank + 1;
    s.command = "python3 train.py";
    s.host = "node" + std::to_string(rank / 2);
    s.pid = 500 + rank;
    s.parent_pid = 400 + rank / 2;
    s.rank = rank;
    s.local_rank = rank % 2;
    s.start_unix_ns = 1'700'000'000'000'000'000;
    s.duration_ns = 9'000'000'000 + rank;
    s.steps = 40;
    s.source = "record";
    s.identity.master = "10.0.0.1:29500";
    s.identity.world_size = 4;
    s.identity.group_rank = rank / 2;
    p.sessions.push_back(s);
    for (const auto& [name, rows, lookups] : {std::tuple<std::string, uint64_t, size_t>{"emb.shared", 20000, 1000 * size_t(rank + 1)},
                                              {"emb.node" + std::to_string(rank / 2), 5000, 800}}) {
      model::Table t;
      t.session_id = s.id;
      t.name = name;
      t.rows = rows;
      t.dim = 16;
      t.dtype = "fp32";
      t.device = "cuda";
      t.weight_bytes = rows * 64;
      stats::TableIngestor ing(rows, stats::StatsConfig{});
      std::vector<int64_t> idx(lookups);
      stats::ZipfGenerator(rows, 1.0, uint64_t(rank) + rows).fill(idx.data(), idx.size());
      ing.add(idx.data(), idx.size());
      t.aggregate = ing.take_delta();
      p.tables.push_back(std::move(t));
    }
    p.memory_events.push_back({s.id, 1000, (rank + 1) << 20, 0x1000, 0, 0, "cudaMalloc", "emb.shared"});
    p.memory_events.push_back({s.id, 2000, -((rank + 1) << 20), 0x1000, 0, 0, "cudaFree", "emb.shared"});
  }
  db::ProfileStore(path.toStdString(), db::ProfileStore::Mode::kCreate).save(p, true);
  made()[key] = path;
  return path;
}

QString fake_recording(int sessions, uint64_t dropped) {
  const QString key = QStringLiteral("fake %1 %2").arg(sessions).arg(dropped);
  if (made().contains(key)) return made()[key];
  const QString path = temp_dir() + QStringLiteral("/fake-%1.edodb").arg(made().size());
  fake::FakeGpuRecordingOptions o;
  o.sessions = sessions;
  if (dropped) o.drops["batches"] = dropped;
  o.tables = 6;
  o.rows = 50'000;
  o.lookups = 100'000;
  o.memory_events = 6'000;
  o.steps = 60;
  o.seed = static_cast<uint64_t>(sessions) * 13 + dropped;
  fake::write_fake_gpu_recording(path.toStdString(), o);
  made()[key] = path;
  return path;
}

QString fake_recording_without_final_flush() {
  const QString key = QStringLiteral("fake without final flush");
  if (made().contains(key)) return made()[key];
  const QString path = temp_dir() + QStringLiteral("/fake-%1.edodb").arg(made().size());
  fake::FakeGpuRecordingOptions o;
  o.tables = 3;
  o.rows = 10'000;
  o.lookups = 20'000;
  o.memory_events = 1'000;
  o.steps = 10;
  o.drops["ended_without_final_flush"] = 1;
  fake::write_fake_gpu_recording(path.toStdString(), o);
  made()[key] = path;
  return path;
}

namespace {
// A python3 that imports torch: $EDO_TEST_PYTHON, the one CMake found, or python3.
QString torch_python(QString* why) {
  QStringList candidates;
  if (!qEnvironmentVariableIsEmpty("EDO_TEST_PYTHON")) candidates << qEnvironmentVariable("EDO_TEST_PYTHON");
  candidates << QStringLiteral(EDO_TEST_PYTHON_DEFAULT) << QStringLiteral("/usr/bin/python3") << QStringLiteral("python3");
  for (const QString& c : candidates) {
    if (c.isEmpty()) continue;
    Run r = run(c, {QStringLiteral("-c"), QStringLiteral("import torch")}, QProcessEnvironment::systemEnvironment(), 120'000);
    if (r.exit_code == 0) return c;
  }
  *why = QStringLiteral("no python3 with torch (tried %1; set EDO_TEST_PYTHON)").arg(candidates.join(QStringLiteral(", ")));
  return {};
}
}  // namespace

QString dlrm_recording(QString* why, const QStringList& script_args) {
  const QString key = QStringLiteral("dlrm ") + script_args.join(QLatin1Char(' '));
  if (made().contains(key)) return made()[key];
  const QString python = torch_python(why);
  if (python.isEmpty()) return {};
  const QString path = temp_dir() + QStringLiteral("/dlrm-%1.edodb").arg(made().size());
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const char* k : {"LD_PRELOAD", "EDO_OUTPUT", "PYTHONPATH", "EDO_TORCH", "NVTX_INJECTION64_PATH"}) env.remove(QString::fromLatin1(k));
  if (!env.contains(QStringLiteral("OMP_NUM_THREADS"))) env.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("2"));
  Run r = run(edo_bin(),
              QStringList{QStringLiteral("record"), QStringLiteral("-o"), path, QStringLiteral("--"), python,
                          source_dir() + QStringLiteral("/examples/dlrm_like.py")} + script_args,
              env);
  if (r.exit_code != 0) qFatal("edo record of dlrm_like.py failed (%d): %s", r.exit_code, r.err.constData());
  made()[key] = path;
  return path;
}

namespace {
QJsonObject parse(const Run& r, const char* what);
}  // namespace

QString torchrec_recording(int processes) {
  const QString key = QStringLiteral("torchrec %1").arg(processes);
  if (made().contains(key)) return made()[key];
  const QString path = temp_dir() + QStringLiteral("/torchrec-%1.edodb").arg(processes);
  QStringList parts;
  for (int i = 0; i < processes; ++i) {
    parts << temp_dir() + QStringLiteral("/torchrec-%1-part%2.edodb").arg(processes).arg(i);
    Run s = run(edo_bin(), {QStringLiteral("synth"), QStringLiteral("-o"), processes == 1 ? path : parts.back(), QStringLiteral("--tables"),
                            QStringLiteral("3"), QStringLiteral("--rows"), QStringLiteral("5000"), QStringLiteral("--lookups"),
                            QString::number(20000 / (i + 1)), QStringLiteral("--seed"), QString::number(i + 1)});
    if (s.exit_code != 0) qFatal("edo synth failed: %s", s.err.constData());
  }
  if (processes > 1) {
    Run m = run(edo_bin(), QStringList{QStringLiteral("merge")} + parts + QStringList{QStringLiteral("-o"), path, QStringLiteral("--force")});
    if (m.exit_code != 0) qFatal("edo merge failed: %s", m.err.constData());
  }
  {
    db::ProfileStore store(path.toStdString(), db::ProfileStore::Mode::kReadWrite);
    store.save_metadata({{"torchrec.table.synth.table_0", R"({"config": "t0", "features": ["f0", "f1"], "bags": 3000, )"
                                                          R"("feature_lookups": [10000, 20000], "feature_bags": [1000, 2000]})"}});
  }
  Run t = run(edo_bin(), {QStringLiteral("tune"), path, QStringLiteral("--budget"), QStringLiteral("1MiB"), QStringLiteral("--backend"),
                          QStringLiteral("cpu"), QStringLiteral("--strategies"), QStringLiteral("fp16,offload"), QStringLiteral("--reps"),
                          QStringLiteral("1")});
  if (t.exit_code != 0) qFatal("edo tune failed: %s", t.err.constData());
  made()[key] = path;
  return path;
}

QString tuned_recording(QJsonObject* plan) {
  static QJsonObject stored;
  const QString key = QStringLiteral("tuned");
  if (!made().contains(key)) {
    const QString path = temp_dir() + QStringLiteral("/tuned.edodb");
    Run s = run(edo_bin(), {QStringLiteral("synth"), QStringLiteral("-o"), path, QStringLiteral("--tables"), QStringLiteral("3"),
                            QStringLiteral("--rows"), QStringLiteral("5000"), QStringLiteral("--lookups"), QStringLiteral("20000")});
    if (s.exit_code != 0) qFatal("edo synth failed: %s", s.err.constData());
    stored = parse(run(edo_bin(), {QStringLiteral("tune"), path, QStringLiteral("--budget"), QStringLiteral("3MiB"), QStringLiteral("--backend"),
                                   QStringLiteral("cpu"), QStringLiteral("--strategies"), QStringLiteral("fp16,int8"), QStringLiteral("--reps"),
                                   QStringLiteral("1"), QStringLiteral("--json")}),
                   "edo tune --json");
    made()[key] = path;
  }
  if (plan) *plan = stored;
  return made()[key];
}

namespace {
QJsonObject parse(const Run& r, const char* what) {
  if (r.exit_code != 0) qFatal("%s failed (%d): %s", what, r.exit_code, r.err.constData());
  QJsonParseError error;
  QJsonDocument doc = QJsonDocument::fromJson(r.out, &error);
  if (!doc.isObject()) qFatal("%s printed no JSON object: %s", what, qPrintable(error.errorString()));
  return doc.object();
}
}  // namespace

QJsonObject report_json(const QString& path, int top_rows) {
  QStringList args = {QStringLiteral("report"), QStringLiteral("--json"), path};
  if (top_rows > 0) args << QStringLiteral("--top") << QString::number(top_rows);
  return parse(run(edo_bin(), args), "edo report --json");
}

QJsonObject diff_json(const QString& before, const QString& after) {
  return parse(run(edo_bin(), {QStringLiteral("diff"), QStringLiteral("--json"), before, after}), "edo diff --json");
}

}  // namespace edo::gui::testing
