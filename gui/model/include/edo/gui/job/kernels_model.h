// GPU kernels by total GPU time (with the tables whose memory each one's arguments point
// into) and NVTX ranges (count, time, lookups, allocations). Entries of one name recorded by
// several processes are summed.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "edo/gui/recording/recording.h"
#include "edo/gui/table_model_base.h"

namespace edo::gui {

struct KernelTotal {
  std::string name;
  uint64_t launches = 0;
  uint64_t total_ns = 0;
  std::set<std::string> tables;
  int sessions = 0;
};
struct RangeTotal {
  std::string name;
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t lookups = 0;
  uint64_t alloc_bytes = 0;
  int sessions = 0;
};
// Sorted by total time, descending (then name).
std::vector<KernelTotal> kernel_totals(const model::Profile& profile);
std::vector<RangeTotal> range_totals(const model::Profile& profile);

class KernelsModel : public TableModelBase {
  Q_OBJECT
 public:
  enum Columns { kName, kLaunches, kTime, kMean, kShare, kTables, kColumnCount };
  explicit KernelsModel(QObject* parent = nullptr);
  void setRecording(RecordingPtr recording);
  const std::vector<KernelTotal>& totals() const { return totals_; }

 protected:
  int rows() const override;
  QVariant cell(int row, int column, int role) const override;

 private:
  std::vector<KernelTotal> totals_;
  uint64_t sum_ns_ = 0;
};

class RangesModel : public TableModelBase {
  Q_OBJECT
 public:
  enum Columns { kName, kCount, kTime, kMean, kLookups, kAllocated, kColumnCount };
  explicit RangesModel(QObject* parent = nullptr);
  void setRecording(RecordingPtr recording);
  const std::vector<RangeTotal>& totals() const { return totals_; }

 protected:
  int rows() const override;
  QVariant cell(int row, int column, int role) const override;

 private:
  std::vector<RangeTotal> totals_;
};

}  // namespace edo::gui
