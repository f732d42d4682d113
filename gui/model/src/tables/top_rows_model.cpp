#include "edo/gui/tables/top_rows_model.h"

#include "edo/gui/format.h"
#include "edo/gui/model_roles.h"

namespace edo::gui {

TopRowsModel::TopRowsModel(QObject* parent)
    : TableModelBase({{tr("Rank"), {}, true},
                      {tr("Row"), tr("Row index in the table"), true},
                      {tr("Reads"), tr("Lookups of this row (estimates for sketched tables)"), true},
                      {tr("Share"), tr("Share of the table's lookups"), true},
                      {tr("Cumulative"), tr("Share of lookups taken by this row and every hotter one"), true}},
                     parent) {}

void TopRowsModel::setDetail(std::shared_ptr<const TableDetail> detail) {
  beginResetModel();
  detail_ = std::move(detail);
  cumulative_.clear();
  if (detail_) {
    uint64_t sum = 0;
    for (const auto& [row, reads] : detail_->top_rows) cumulative_.push_back(sum += reads);
  }
  endResetModel();
}

int TopRowsModel::rows() const { return detail_ ? static_cast<int>(detail_->top_rows.size()) : 0; }

QVariant TopRowsModel::cell(int row, int column, int role) const {
  const auto& [id, reads] = detail_->top_rows[static_cast<size_t>(row)];
  const double lookups = static_cast<double>(detail_->lookups);
  const double share = lookups > 0 ? static_cast<double>(reads) / lookups : 0.0;
  const double cumulative = lookups > 0 ? static_cast<double>(cumulative_[static_cast<size_t>(row)]) / lookups : 0.0;
  if (role == ShareRole && column == kShare) return share;
  if (role == ShareRole && column == kCumulative) return cumulative;
  switch (column) {
    case kRank: return answer(role, QString::number(row + 1), row + 1);
    case kRow: return answer(role, QString::number(id), qulonglong(id));
    case kReads: return answer(role, format_count(reads), qulonglong(reads));
    case kShare: return answer(role, format_share(share, 2), share);
    case kCumulative: return answer(role, format_share(cumulative, 1), cumulative);
  }
  return {};
}

}  // namespace edo::gui
