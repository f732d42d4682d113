// A read-only table view over `model`, sorted by its SortRole (edo/gui/model_roles.h) through a
// proxy, by `sort_column` in `order`: the kernels and ranks views' tables.
#pragma once

#include <QAbstractItemModel>
#include <QTableView>

namespace edo::gui {

QTableView* make_sorted_table(QAbstractItemModel* model, int sort_column, Qt::SortOrder order, QWidget* parent);

}  // namespace edo::gui
