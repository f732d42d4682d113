// Item data roles shared by the dashboard's item models and views.
#pragma once

#include <Qt>

namespace edo::gui {

enum ModelRole {
  // A number (or string) to sort by: the display text of "1.50 GiB" does not sort.
  SortRole = Qt::UserRole + 1,
  // A share in [0, 1] that a delegate draws as a bar behind the text.
  ShareRole,
  // The table name of a row (for opening its detail).
  TableNameRole,
};

}  // namespace edo::gui
