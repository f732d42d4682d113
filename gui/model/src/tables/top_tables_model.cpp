#include "edo/gui/tables/top_tables_model.h"

#include <algorithm>

#include "edo/gui/format.h"
#include "edo/gui/model_roles.h"
#include "edo/gui/tables/table_fields.h"

namespace edo::gui {

TopTablesModel::TopTablesModel(Measure measure, int limit, QObject* parent)
    : TableModelBase({{tr("Table"), {}, false},
                      {measure == Measure::kBytes ? tr("Bytes") : tr("Lookups"),
                       measure == Measure::kBytes ? tr("Weights plus optimizer state") : tr("Row reads"), true},
                      {tr("Share"), measure == Measure::kBytes ? tr("Share of all tables' bytes") : tr("Share of all lookups"), true}},
                     parent),
      measure_(measure),
      limit_(limit) {}

void TopTablesModel::setRecording(RecordingPtr recording) {
  beginResetModel();
  entries_.clear();
  if (recording) {
    uint64_t sum = 0;
    for (const auto& t : recording->tables) {
      const uint64_t v = measure_ == Measure::kBytes ? total_bytes(t) : lookups(t);
      sum += v;
      if (v > 0) entries_.push_back({t.name, v, 0.0});  // tied names own no bytes of their own
    }
    std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.value > b.value; });
    if (entries_.size() > static_cast<size_t>(limit_)) entries_.resize(static_cast<size_t>(limit_));
    for (auto& e : entries_) e.share = sum ? static_cast<double>(e.value) / static_cast<double>(sum) : 0.0;
  }
  endResetModel();
}

int TopTablesModel::rows() const { return static_cast<int>(entries_.size()); }

QVariant TopTablesModel::cell(int row, int column, int role) const {
  const Entry& e = entries_[static_cast<size_t>(row)];
  if (role == TableNameRole) return QString::fromStdString(e.name);
  if (role == ShareRole && column == kShare) return e.share;
  if (role == Qt::ToolTipRole && column == kName) return QString::fromStdString(e.name);
  switch (column) {
    case kName: return answer(role, QString::fromStdString(e.name), QString::fromStdString(e.name));
    case kValue:
      return answer(role, measure_ == Measure::kBytes ? format_bytes(e.value) : format_count(e.value), qulonglong(e.value));
    case kShare: return answer(role, format_share(e.share), e.share);
  }
  return {};
}

}  // namespace edo::gui
