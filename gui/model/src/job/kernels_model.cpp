#include "edo/gui/job/kernels_model.h"

#include <algorithm>
#include <map>

#include "edo/gui/format.h"
#include "edo/gui/model_roles.h"

namespace edo::gui {

std::vector<KernelTotal> kernel_totals(const model::Profile& profile) {
  std::map<std::string, KernelTotal> by_name;
  for (const auto& k : profile.kernels) {
    KernelTotal& t = by_name[k.name];
    t.name = k.name;
    t.launches += k.launches;
    t.total_ns += k.total_ns;
    t.tables.insert(k.tables.begin(), k.tables.end());
    t.sessions += 1;
  }
  std::vector<KernelTotal> out;
  for (auto& [name, t] : by_name) out.push_back(std::move(t));
  std::stable_sort(out.begin(), out.end(), [](const KernelTotal& a, const KernelTotal& b) { return a.total_ns > b.total_ns; });
  return out;
}

std::vector<RangeTotal> range_totals(const model::Profile& profile) {
  std::map<std::string, RangeTotal> by_name;
  for (const auto& r : profile.ranges) {
    RangeTotal& t = by_name[r.name];
    t.name = r.name;
    t.count += r.count;
    t.total_ns += r.total_ns;
    t.lookups += r.lookups;
    t.alloc_bytes += r.alloc_bytes;
    t.sessions += 1;
  }
  std::vector<RangeTotal> out;
  for (auto& [name, t] : by_name) out.push_back(std::move(t));
  std::stable_sort(out.begin(), out.end(), [](const RangeTotal& a, const RangeTotal& b) { return a.total_ns > b.total_ns; });
  return out;
}

KernelsModel::KernelsModel(QObject* parent)
    : TableModelBase({{tr("Kernel"), {}, false},
                      {tr("Launches"), {}, true},
                      {tr("GPU time"), tr("Total time on the GPU (CUPTI activity records)"), true},
                      {tr("Mean"), tr("GPU time per launch"), true},
                      {tr("Share"), tr("Share of all kernels' GPU time"), true},
                      {tr("Tables read"), tr("Tables whose memory the kernel's pointer arguments point into"), false}},
                     parent) {}

void KernelsModel::setRecording(RecordingPtr recording) {
  beginResetModel();
  totals_ = recording ? kernel_totals(recording->profile) : std::vector<KernelTotal>{};
  sum_ns_ = 0;
  for (const auto& k : totals_) sum_ns_ += k.total_ns;
  endResetModel();
}

int KernelsModel::rows() const { return static_cast<int>(totals_.size()); }

QVariant KernelsModel::cell(int row, int column, int role) const {
  const KernelTotal& k = totals_[static_cast<size_t>(row)];
  const double share = sum_ns_ ? static_cast<double>(k.total_ns) / static_cast<double>(sum_ns_) : 0.0;
  const double mean = k.launches ? static_cast<double>(k.total_ns) / static_cast<double>(k.launches) : 0.0;
  if (role == ShareRole && column == kShare) return share;
  if (role == Qt::ToolTipRole && column == kName) return QString::fromStdString(k.name);
  QStringList tables;
  for (const auto& t : k.tables) tables << QString::fromStdString(t);
  if (role == Qt::ToolTipRole && column == kTables && !tables.isEmpty()) return tables.join(QLatin1Char('\n'));
  switch (column) {
    case kName: return answer(role, QString::fromStdString(k.name), QString::fromStdString(k.name));
    case kLaunches: return answer(role, format_count(k.launches), qulonglong(k.launches));
    case kTime: return answer(role, format_duration_ns(static_cast<double>(k.total_ns)), qulonglong(k.total_ns));
    case kMean: return answer(role, format_duration_ns(mean), mean);
    case kShare: return answer(role, format_share(share), share);
    case kTables: return answer(role, tables.isEmpty() ? tr("none") : tables.join(QStringLiteral(", ")), tables.join(QStringLiteral(", ")));
  }
  return {};
}

RangesModel::RangesModel(QObject* parent)
    : TableModelBase({{tr("NVTX range"), tr("domain::range, or range in the default domain"), false},
                      {tr("Count"), tr("Times the range was entered"), true},
                      {tr("Time"), tr("Total wall time inside the range"), true},
                      {tr("Mean"), tr("Time per entry"), true},
                      {tr("Lookups"), tr("Table lookups made inside the range (innermost range)"), true},
                      {tr("Allocated"), tr("Device bytes allocated inside the range"), true}},
                     parent) {}

void RangesModel::setRecording(RecordingPtr recording) {
  beginResetModel();
  totals_ = recording ? range_totals(recording->profile) : std::vector<RangeTotal>{};
  endResetModel();
}

int RangesModel::rows() const { return static_cast<int>(totals_.size()); }

QVariant RangesModel::cell(int row, int column, int role) const {
  const RangeTotal& r = totals_[static_cast<size_t>(row)];
  const double mean = r.count ? static_cast<double>(r.total_ns) / static_cast<double>(r.count) : 0.0;
  if (role == Qt::ToolTipRole && column == kName) return QString::fromStdString(r.name);
  switch (column) {
    case kName: return answer(role, QString::fromStdString(r.name), QString::fromStdString(r.name));
    case kCount: return answer(role, format_count(r.count), qulonglong(r.count));
    case kTime: return answer(role, format_duration_ns(static_cast<double>(r.total_ns)), qulonglong(r.total_ns));
    case kMean: return answer(role, format_duration_ns(mean), mean);
    case kLookups: return answer(role, format_count(r.lookups), qulonglong(r.lookups));
    case kAllocated: return answer(role, format_bytes(r.alloc_bytes), qulonglong(r.alloc_bytes));
  }
  return {};
}

}  // namespace edo::gui
