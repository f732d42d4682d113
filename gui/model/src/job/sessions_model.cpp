#include "edo/gui/job/sessions_model.h"

#include <QColor>

#include "edo/gui/format.h"
#include "edo/gui/model_roles.h"

namespace edo::gui {

SessionsModel::SessionsModel(QObject* parent)
    : TableModelBase({{tr("Role"), tr("root: the job edo record started; rank: the first process of a RANK; forked worker: forked from "
                                      "another traced process (DataLoader workers); child: any other process the job started"), false},
                      {tr("Command"), tr("The traced process's command line"), false},
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
  roles_ = recording_ ? model::job_view(recording_->profile).roles : std::vector<model::Role>{};
  endResetModel();
}

int SessionsModel::rows() const { return recording_ ? static_cast<int>(recording_->profile.sessions.size()) : 0; }

QString describe_role(const model::Session& s, model::Role role) {
  switch (role) {
    case model::Role::kRoot: return QObject::tr("root");
    case model::Role::kRank: return s.rank ? QObject::tr("rank %1").arg(*s.rank) : QObject::tr("rank");
    case model::Role::kWorker: return QObject::tr("forked worker");
    case model::Role::kChild: return QObject::tr("child process");
  }
  return {};
}

QString describe_roles(const model::JobView& job) {
  QStringList parts;
  auto add = [&](size_t n, const QString& one, const QString& many) {
    if (n) parts << (n == 1 ? one : many.arg(n));
  };
  const size_t roots = job.count(model::Role::kRoot);
  if (roots == 1) parts << QObject::tr("the root");
  if (roots > 1) parts << QObject::tr("the root in %1 images (exec)").arg(roots);
  add(job.count(model::Role::kRank), QObject::tr("1 rank"), QObject::tr("%1 ranks"));
  add(job.count(model::Role::kWorker), QObject::tr("1 forked worker"), QObject::tr("%1 forked workers"));
  add(job.count(model::Role::kChild), QObject::tr("1 other child"), QObject::tr("%1 other children"));
  return parts.join(QStringLiteral(", "));
}

QString describe_exit(const model::Session& s, model::Role role) {
  if (!s.exit_code)
    return role == model::Role::kWorker ? QObject::tr("forked worker, exit not observed") : QObject::tr("exit not recorded");
  const int code = *s.exit_code;
  if (code > 128 && code < 160) return QObject::tr("killed by signal %1 (exit %2)").arg(code - 128).arg(code);
  return QObject::tr("exit %1").arg(code);
}

QVariant SessionsModel::cell(int row, int column, int role) const {
  const model::Session& s = recording_->profile.sessions[static_cast<size_t>(row)];
  const model::Role job_role = static_cast<size_t>(row) < roles_.size() ? roles_[static_cast<size_t>(row)] : model::Role::kChild;
  if (role == Qt::ToolTipRole && column == kCommand) return QString::fromStdString(s.command);
  if (role == Qt::ToolTipRole && column == kExitCode && !s.exit_code && job_role == model::Role::kWorker)
    return tr("A forked worker's exit is not reported to edo (its parent, not edo, waits for it)");
  if (role == Qt::ForegroundRole && column == kDropped && s.dropped_events > 0) return QColor(0xb0, 0x30, 0x00);
  switch (column) {
    case kRole: return answer(role, describe_role(s, job_role), static_cast<int>(job_role));
    case kCommand: return answer(role, QString::fromStdString(s.command), QString::fromStdString(s.command));
    case kHost: return answer(role, QString::fromStdString(s.host), QString::fromStdString(s.host));
    case kPid: return answer(role, QString::number(s.pid), qlonglong(s.pid));
    case kRank: return answer(role, s.rank ? QString::number(*s.rank) : QStringLiteral("–"), s.rank ? qlonglong(*s.rank) : -1);
    case kGpus: return answer(role, s.gpus.empty() ? tr("none") : QString::fromStdString(s.gpus), QString::fromStdString(s.gpus));
    case kDuration: return answer(role, format_duration_ns(static_cast<double>(s.duration_ns)), qlonglong(s.duration_ns));
    case kExitCode: return answer(role, describe_exit(s, job_role), s.exit_code ? *s.exit_code : -1);
    case kSteps: return answer(role, format_count(s.steps), qulonglong(s.steps));
    case kDropped: return answer(role, format_count(s.dropped_events), qulonglong(s.dropped_events));
  }
  return {};
}

}  // namespace edo::gui
