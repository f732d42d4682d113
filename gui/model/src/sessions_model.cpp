#include "edo/gui/sessions_model.h"

#include <QColor>

#include "edo/gui/format.h"
#include "edo/gui/model_roles.h"

namespace edo::gui {

SessionsModel::SessionsModel(QObject* parent)
    : TableModelBase({{tr("Command"), tr("The traced process's command line"), false},
                      {tr("Host"), {}, false},
                      {tr("PID"), {}, true},
                      {tr("Rank"), tr("RANK of a distributed job, when set"), true},
                      {tr("GPUs"), {}, false},
                      {tr("Duration"), {}, true},
                      {tr("Exit"), tr("The process's exit code (128 + signal when killed)"), false},
                      {tr("Steps"), tr("Training steps (edo_step() calls, optimizer steps)"), true},
                      {tr("Dropped"), tr("Events the tracer dropped because its buffers were full"), true}},
                     parent) {}

void SessionsModel::setRecording(RecordingPtr recording) {
  beginResetModel();
  recording_ = std::move(recording);
  endResetModel();
}

int SessionsModel::rows() const { return recording_ ? static_cast<int>(recording_->profile.sessions.size()) : 0; }

QString describe_exit(const model::Session& s) {
  if (!s.exit_code) return QObject::tr("unknown");
  const int code = *s.exit_code;
  if (code > 128 && code < 160) return QObject::tr("killed by signal %1 (exit %2)").arg(code - 128).arg(code);
  return QObject::tr("exit %1").arg(code);
}

QVariant SessionsModel::cell(int row, int column, int role) const {
  const model::Session& s = recording_->profile.sessions[static_cast<size_t>(row)];
  if (role == Qt::ToolTipRole && column == kCommand) return QString::fromStdString(s.command);
  if (role == Qt::ForegroundRole && column == kDropped && s.dropped_events > 0) return QColor(0xb0, 0x30, 0x00);
  switch (column) {
    case kCommand: return answer(role, QString::fromStdString(s.command), QString::fromStdString(s.command));
    case kHost: return answer(role, QString::fromStdString(s.host), QString::fromStdString(s.host));
    case kPid: return answer(role, QString::number(s.pid), qlonglong(s.pid));
    case kRank: return answer(role, s.rank ? QString::number(*s.rank) : QStringLiteral("–"), s.rank ? qlonglong(*s.rank) : -1);
    case kGpus: return answer(role, s.gpus.empty() ? tr("none") : QString::fromStdString(s.gpus), QString::fromStdString(s.gpus));
    case kDuration: return answer(role, format_duration_ns(static_cast<double>(s.duration_ns)), qlonglong(s.duration_ns));
    case kExitCode: return answer(role, describe_exit(s), s.exit_code ? *s.exit_code : -1);
    case kSteps: return answer(role, format_count(s.steps), qulonglong(s.steps));
    case kDropped: return answer(role, format_count(s.dropped_events), qulonglong(s.dropped_events));
  }
  return {};
}

}  // namespace edo::gui
