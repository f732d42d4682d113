// Draws a cell's share (ShareRole, 0..1) as a bar behind its text, as hotspot's cost
// delegate does: the biggest entries stand out without a chart.
#pragma once

#include <QStyledItemDelegate>

namespace edo::gui {

class ShareBarDelegate : public QStyledItemDelegate {
  Q_OBJECT
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
};

}  // namespace edo::gui
