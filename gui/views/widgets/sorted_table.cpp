#include "sorted_table.h"

#include <QHeaderView>
#include <QSortFilterProxyModel>

#include "edo/gui/model_roles.h"

namespace edo::gui {

QTableView* make_sorted_table(QAbstractItemModel* model, int sort_column, Qt::SortOrder order, QWidget* parent) {
  auto* proxy = new QSortFilterProxyModel(parent);
  proxy->setSourceModel(model);
  proxy->setSortRole(SortRole);
  auto* view = new QTableView(parent);
  view->setModel(proxy);
  view->setSortingEnabled(true);
  view->sortByColumn(sort_column, order);
  view->verticalHeader()->hide();
  view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 6);
  view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view->horizontalHeader()->setResizeContentsPrecision(64);
  view->setSelectionBehavior(QAbstractItemView::SelectRows);
  view->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view->setAlternatingRowColors(true);
  view->setWordWrap(false);
  return view;
}

}  // namespace edo::gui
