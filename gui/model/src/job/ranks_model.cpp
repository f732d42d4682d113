#include "edo/gui/job/ranks_model.h"

#include <algorithm>
#include <set>

#include "edo/gui/format.h"
#include "edo/gui/model_roles.h"

namespace edo::gui {

RanksModel::RanksModel(QObject* parent) : QAbstractTableModel(parent) {}

void RanksModel::setRecording(RecordingPtr recording) {
  beginResetModel();
  ranks_ = recording ? recording->ranks : std::vector<model::RankView>{};
  tables_.clear();
  if (recording) {
    std::set<std::string> read;
    for (const auto& r : ranks_)
      for (const auto& [t, n] : r.lookups_by_table) read.insert(t);
    for (const auto& t : recording->tables)  // the recording's order (largest first)
      if (read.erase(t.name)) tables_.push_back(t.name);
    tables_.insert(tables_.end(), read.begin(), read.end());
  }
  endResetModel();
}

int RanksModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(ranks_.size()); }

int RanksModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kFirstTable + static_cast<int>(tables_.size());
}

QVariant RanksModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= columnCount()) return {};
  if (section >= kFirstTable) {
    const QString name = QString::fromStdString(tables_[size_t(section - kFirstTable)]);
    if (role == Qt::DisplayRole) return name;
    if (role == Qt::ToolTipRole) return tr("Lookups of %1 by each rank (its forked workers included)").arg(name);
    return {};
  }
  static const char* const titles[] = {"Rank", "Node", "PID", "Steps", "Time", "Peak memory", "Lookups"};
  static const char* const tips[] = {"RANK (its local rank on the node in brackets)",
                                     "The host the rank ran on (EDO_HOSTNAME when set), with GROUP_RANK",
                                     "The rank's own process",
                                     "edo_step() calls",
                                     "Wall time of the rank's process",
                                     "Largest live device memory of the rank's processes (the sum of its tables when it has no timeline)",
                                     "Lookups of every table by the rank"};
  if (role == Qt::DisplayRole) return tr(titles[section]);
  if (role == Qt::ToolTipRole) return tr(tips[section]);
  return {};
}

QVariant RanksModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= columnCount()) return {};
  const model::RankView& r = ranks_[size_t(index.row())];
  const int c = index.column();
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue(c == kNode ? (Qt::AlignLeft | Qt::AlignVCenter) : (Qt::AlignRight | Qt::AlignVCenter));
  auto answer = [&](const QVariant& display, const QVariant& sort) -> QVariant {
    if (role == Qt::DisplayRole) return display;
    if (role == SortRole) return sort;
    return {};
  };
  if (c >= kFirstTable) {
    const std::string& t = tables_[size_t(c - kFirstTable)];
    auto it = r.lookups_by_table.find(t);
    const uint64_t n = it == r.lookups_by_table.end() ? 0 : it->second;
    if (role == ShareRole) {
      uint64_t busiest = 0;
      for (const auto& o : ranks_)
        if (auto f = o.lookups_by_table.find(t); f != o.lookups_by_table.end()) busiest = std::max(busiest, f->second);
      return busiest ? static_cast<double>(n) / static_cast<double>(busiest) : 0.0;
    }
    return answer(format_count(n), qulonglong(n));
  }
  switch (c) {
    case kRank:
      return answer(r.local_rank ? QStringLiteral("%1 (%2)").arg(r.rank).arg(*r.local_rank) : QString::number(r.rank), qlonglong(r.rank));
    case kNode: {
      const QString node = QString::fromStdString(r.node);
      return answer(r.group_rank ? QStringLiteral("%1 · node %2").arg(node).arg(*r.group_rank) : node, node);
    }
    case kPid: return answer(QString::number(r.pid), qlonglong(r.pid));
    case kSteps: return answer(format_count(r.steps), qulonglong(r.steps));
    case kTime: return answer(format_duration_ns(static_cast<double>(r.duration_ns)), qlonglong(r.duration_ns));
    case kPeak:
      return answer(format_bytes(static_cast<uint64_t>(r.peak_bytes)) + (r.peak_from_timeline ? QString() : tr(" (tables)")),
                    qlonglong(r.peak_bytes));
    case kLookups: return answer(format_count(r.lookups), qulonglong(r.lookups));
  }
  return {};
}

ImbalanceModel::ImbalanceModel(QObject* parent)
    : TableModelBase({{tr("Table"), {}, false},
                      {tr("Ranks"), tr("Ranks that read the table"), true},
                      {tr("Busiest rank"), tr("The rank that read the table most"), true},
                      {tr("Its lookups"), tr("The busiest rank's lookups of the table"), true},
                      {tr("Mean"), tr("Lookups per rank, over every rank of the job"), true},
                      {tr("Imbalance"), tr("The busiest rank against the mean (1.00x: balanced; the bar fills as one rank does it all)"), true}},
                     parent) {}

void ImbalanceModel::setRecording(RecordingPtr recording) {
  beginResetModel();
  ranks_ = recording ? recording->ranks.size() : 0;
  rows_ = recording ? model::rank_imbalance(recording->ranks) : std::vector<model::TableImbalance>{};
  endResetModel();
}

int ImbalanceModel::rows() const { return static_cast<int>(rows_.size()); }

QVariant ImbalanceModel::cell(int row, int column, int role) const {
  const model::TableImbalance& t = rows_[static_cast<size_t>(row)];
  if (role == ShareRole && column == kImbalance)
    return ranks_ > 1 ? std::clamp((t.ratio - 1.0) / static_cast<double>(ranks_ - 1), 0.0, 1.0) : 0.0;
  if (role == TableNameRole) return QString::fromStdString(t.table);
  switch (column) {
    case kTable: return answer(role, QString::fromStdString(t.table), QString::fromStdString(t.table));
    case kRanks: return answer(role, QStringLiteral("%1 of %2").arg(t.ranks).arg(ranks_), qulonglong(t.ranks));
    case kBusiestRank: return answer(role, QString::number(t.busiest_rank), qlonglong(t.busiest_rank));
    case kBusiest: return answer(role, format_count(t.busiest), qulonglong(t.busiest));
    case kMean: return answer(role, QString::number(t.mean, 'f', 1), t.mean);
    case kImbalance: return answer(role, QStringLiteral("%1x").arg(t.ratio, 0, 'f', 2), t.ratio);
  }
  return {};
}

}  // namespace edo::gui
