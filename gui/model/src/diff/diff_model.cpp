#include "edo/gui/diff/diff_model.h"

#include <QColor>
#include <QFont>

#include <cmath>

#include "edo/gui/format.h"
#include "edo/gui/model_roles.h"

namespace edo::gui {

namespace {

// Parent rows have internal id 0; a metric row under table t has id t + 1.
constexpr quintptr kTopLevel = 0;

QString show(double v, const DiffMetric& m) {
  if (m.share) return format_share(v);
  if (QString::fromLatin1(m.key).endsWith(QLatin1String("bytes"))) return format_bytes(static_cast<uint64_t>(v));
  return format_count(static_cast<uint64_t>(v));
}

}  // namespace

DiffModel::DiffModel(QObject* parent) : QAbstractItemModel(parent) {}

void DiffModel::setDiff(std::shared_ptr<const RecordingDiff> diff) {
  beginResetModel();
  diff_ = std::move(diff);
  shown_.clear();
  if (diff_) {
    for (const auto& t : diff_->tables) {
      std::vector<size_t> metrics;
      for (size_t m = 0; m < diff_metrics().size(); ++m) {
        const bool one_sided = t.status != TableDiff::Status::kBoth;
        if (one_sided || t.before[m] != t.after[m]) metrics.push_back(m);
      }
      shown_.push_back(std::move(metrics));
    }
  }
  endResetModel();
}

QModelIndex DiffModel::index(int row, int column, const QModelIndex& parent) const {
  if (!hasIndex(row, column, parent)) return {};
  if (!parent.isValid()) return createIndex(row, column, kTopLevel);
  return createIndex(row, column, static_cast<quintptr>(parent.row()) + 1);
}

QModelIndex DiffModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == kTopLevel) return {};
  return createIndex(static_cast<int>(child.internalId() - 1), 0, kTopLevel);
}

int DiffModel::rowCount(const QModelIndex& parent) const {
  if (!diff_) return 0;
  if (!parent.isValid()) return static_cast<int>(diff_->tables.size());
  if (parent.internalId() != kTopLevel || parent.column() != 0) return 0;
  return static_cast<int>(shown_[static_cast<size_t>(parent.row())].size());
}

int DiffModel::columnCount(const QModelIndex&) const { return kColumnCount; }

QVariant DiffModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kName: return tr("Table / metric");
    case kBefore: return tr("Before");
    case kAfter: return tr("After");
    case kChange: return tr("Change");
  }
  return {};
}

QVariant DiffModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue(Qt::Alignment((index.column() == kName ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignVCenter));
  if (index.internalId() == kTopLevel) return tableData(diff_->tables[static_cast<size_t>(index.row())], index.column(), role);
  const size_t t = index.internalId() - 1;
  return metricData(diff_->tables[t], shown_[t][static_cast<size_t>(index.row())], index.column(), role);
}

QVariant DiffModel::tableData(const TableDiff& t, int column, int role) const {
  if (role == TableNameRole) return QString::fromStdString(t.name);
  if (role == Qt::FontRole && column == kName) {
    QFont f;
    f.setBold(true);
    return f;
  }
  const size_t changed = shown_[static_cast<size_t>(&t - diff_->tables.data())].size();
  QString text;
  switch (column) {
    case kName: text = QString::fromStdString(t.name); break;
    case kBefore: text = t.status == TableDiff::Status::kOnlyAfter ? tr("absent") : t.shape_before; break;
    case kAfter: text = t.status == TableDiff::Status::kOnlyBefore ? tr("absent") : t.shape_after; break;
    case kChange:
      text = t.status == TableDiff::Status::kOnlyBefore  ? tr("only before")
             : t.status == TableDiff::Status::kOnlyAfter ? tr("only after")
             : changed == 0                              ? tr("unchanged")
                                                         : changed == 1 ? tr("1 metric changed") : tr("%1 metrics changed").arg(changed);
      break;
  }
  if (role == Qt::ForegroundRole && column == kChange && t.status != TableDiff::Status::kBoth) return QColor(0xb0, 0x30, 0x00);
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return text;
  if (role == SortRole) return text;
  return {};
}

QVariant DiffModel::metricData(const TableDiff& t, size_t m, int column, int role) const {
  const DiffMetric& metric = diff_metrics()[m];
  const bool has_before = !t.before.empty(), has_after = !t.after.empty();
  const double a = has_before ? t.before[m] : 0.0, b = has_after ? t.after[m] : 0.0;
  QString text;
  QVariant sort;
  switch (column) {
    case kName: text = metric.title; sort = text; break;
    case kBefore: text = has_before ? show(a, metric) : QStringLiteral("–"); sort = a; break;
    case kAfter: text = has_after ? show(b, metric) : QStringLiteral("–"); sort = b; break;
    case kChange:
      if (has_before && has_after) {
        text = metric.share ? format_share_change(a, b) : format_change(a, b);
        sort = metric.share ? b - a : (a != 0 ? (b - a) / a : (b != 0 ? INFINITY : 0.0));
      }
      break;
  }
  if (role == Qt::DisplayRole) return text;
  if (role == SortRole) return sort;
  if (role == Qt::ToolTipRole && column == kName) return QString::fromLatin1(metric.key);
  return {};
}

}  // namespace edo::gui
