#include "share_bar_delegate.h"

#include <QPainter>

#include <algorithm>

#include "edo/gui/model_roles.h"

namespace edo::gui {

void ShareBarDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const {
  const QVariant share = index.data(ShareRole);
  if (share.isValid()) {
    const double s = std::clamp(share.toDouble(), 0.0, 1.0);
    QRect bar = option.rect.adjusted(2, 3, -2, -3);
    bar.setWidth(static_cast<int>(bar.width() * s));
    painter->save();
    painter->fillRect(bar, QColor(0x4e, 0x79, 0xa7, 70));
    painter->restore();
  }
  QStyledItemDelegate::paint(painter, option, index);
}

}  // namespace edo::gui
