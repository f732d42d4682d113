#include "edo/gui/table_model_base.h"

#include "edo/gui/model_roles.h"

namespace edo::gui {

TableModelBase::TableModelBase(QList<Column> columns, QObject* parent)
    : QAbstractTableModel(parent), columns_(std::move(columns)) {}

int TableModelBase::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : rows(); }

int TableModelBase::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(columns_.size());
}

QVariant TableModelBase::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= columns_.size()) return {};
  const Column& c = columns_[section];
  if (role == Qt::DisplayRole) return c.title;
  if (role == Qt::ToolTipRole && !c.tooltip.isEmpty()) return c.tooltip;
  if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::Alignment((c.numeric ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter));
  return {};
}

QVariant TableModelBase::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  if (role == Qt::TextAlignmentRole) {
    return QVariant::fromValue(Qt::Alignment((columns_[index.column()].numeric ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter));
  }
  return cell(index.row(), index.column(), role);
}

QVariant TableModelBase::answer(int role, const QVariant& display, const QVariant& sort) {
  if (role == Qt::DisplayRole) return display;
  if (role == SortRole) return sort;
  return {};
}

}  // namespace edo::gui
