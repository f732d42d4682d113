#include "edo/gui/diff_model.h"

#include <QColor>
#include <QFont>

#include <cmath>

#include "edo/gui/format.h"
#include "edo/gui/model_roles.h"

namespace edo::gui {

namespace {
QList<TableModelBase::Column> diff_columns() {
  QList<TableModelBase::Column> cols = {
      {QObject::tr("Table"), {}, false},
      {QObject::tr("Shape"), QObject::tr("rows x dim dtype; both when it changed"), false}};
  for (const auto& m : diff_metrics())
    cols.push_back({m.title, m.share ? QObject::tr("before → after (change in percentage points)")
                                     : QObject::tr("before → after (relative change)"),
                    true});
  return cols;
}

QString show(double v, const DiffMetric& m) {
  if (m.share) return format_share(v);
  if (QString::fromLatin1(m.key).endsWith(QLatin1String("bytes"))) return format_bytes(static_cast<uint64_t>(v));
  return format_count(static_cast<uint64_t>(v));
}
}  // namespace

DiffModel::DiffModel(QObject* parent) : TableModelBase(diff_columns(), parent) {}

void DiffModel::setDiff(std::shared_ptr<const RecordingDiff> diff) {
  beginResetModel();
  diff_ = std::move(diff);
  endResetModel();
}

bool DiffModel::columnHasData(int column) const {
  if (column < kFirstMetric) return true;
  if (!diff_) return false;
  const size_t m = static_cast<size_t>(column - kFirstMetric);
  for (const auto& t : diff_->tables) {
    if (!t.before.empty() && t.before[m] != 0) return true;
    if (!t.after.empty() && t.after[m] != 0) return true;
  }
  return false;
}

int DiffModel::rows() const { return diff_ ? static_cast<int>(diff_->tables.size()) : 0; }

QVariant DiffModel::cell(int row, int column, int role) const {
  const TableDiff& t = diff_->tables[static_cast<size_t>(row)];
  if (role == TableNameRole) return QString::fromStdString(t.name);
  if (column == kName) {
    if (role == Qt::ToolTipRole) return QString::fromStdString(t.name);
    return answer(role, QString::fromStdString(t.name), QString::fromStdString(t.name));
  }
  if (column == kStatus) {
    QString text;
    switch (t.status) {
      case TableDiff::Status::kOnlyBefore: text = tr("only before: %1").arg(t.shape_before); break;
      case TableDiff::Status::kOnlyAfter: text = tr("only after: %1").arg(t.shape_after); break;
      case TableDiff::Status::kBoth:
        text = t.shape_before == t.shape_after ? t.shape_before : t.shape_before + QStringLiteral(" → ") + t.shape_after;
    }
    if (role == Qt::ForegroundRole && t.status != TableDiff::Status::kBoth) return QColor(0xb0, 0x30, 0x00);
    return answer(role, text, text);
  }
  const size_t m = static_cast<size_t>(column - kFirstMetric);
  const DiffMetric& metric = diff_metrics()[m];
  if (t.status != TableDiff::Status::kBoth) {
    const auto& side = t.status == TableDiff::Status::kOnlyBefore ? t.before : t.after;
    return answer(role, show(side[m], metric), QVariant());
  }
  const double a = t.before[m], b = t.after[m];
  if (role == Qt::ForegroundRole && a == b) return QColor(Qt::gray);
  if (role == Qt::FontRole && a != b) {
    QFont f;
    f.setBold(true);
    return f;
  }
  const QString change = metric.share ? format_share_change(a, b) : format_change(a, b);
  const QString text = a == b ? show(a, metric) : show(a, metric) + QStringLiteral(" → ") + show(b, metric) + QStringLiteral("  (") + change + QStringLiteral(")");
  // Sort by the size of the change (relative, or in points for shares).
  const double key = metric.share ? b - a : (a != 0 ? (b - a) / a : (b != 0 ? INFINITY : 0.0));
  return answer(role, text, key);
}

}  // namespace edo::gui
