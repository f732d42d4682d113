// The Tuner view's tables: the plan (one row per table: its strategy, its memory tier
// (model::tier_of: device, host or ssd), memory before and after, bytes on the SSD, step time,
// why) and every candidate measured (strategy, memory, time, error, hit rate, note),
// from a model::TuneResult that `edo tune` stored or the dashboard just ran.
#pragma once

#include <memory>

#include "edo/gui/table_model_base.h"
#include "edo/model/tune.h"

namespace edo::gui {

using TuneResultPtr = std::shared_ptr<const model::TuneResult>;

// The tuner library words its notes for `edo tune`'s command line ("--max-error E to change
// it"); the dashboard's user sets fields, not flags. The same text in the Tuner view's words:
// flags become the fields that set them, and advice that only the command line can follow
// names what to do without a flag.
QString dashboard_wording(const QString& tuner_text);

// "int8", "shared (with a)", "unchanged": what a plan choice does to its table.
QString choice_strategy(const model::TuneResult& result, const model::TuneChoice& choice);

class PlanModel : public TableModelBase {
  Q_OBJECT
 public:
  enum Columns { kTable, kStrategy, kTier, kRecorded, kPlanned, kSsd, kSaved, kStepTime, kError, kHeadroom, kWhy, kColumnCount };
  explicit PlanModel(QObject* parent = nullptr);
  void setResult(TuneResultPtr result);

 protected:
  int rows() const override;
  QVariant cell(int row, int column, int role) const override;

 private:
  TuneResultPtr result_;
};

class CandidatesModel : public TableModelBase {
  Q_OBJECT
 public:
  enum Columns { kTable, kStrategy, kTier, kDevice, kHost, kSsd, kStepTime, kError, kHitRate, kHeadroom, kRetraining, kInPlan, kNote, kColumnCount };
  explicit CandidatesModel(QObject* parent = nullptr);
  void setResult(TuneResultPtr result);

 protected:
  int rows() const override;
  QVariant cell(int row, int column, int role) const override;

 private:
  TuneResultPtr result_;
  std::vector<bool> chosen_;  // per candidate: in the plan
};

}  // namespace edo::gui
