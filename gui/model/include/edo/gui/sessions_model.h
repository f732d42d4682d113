// The traced processes of a recording (one row per session).
#pragma once

#include "edo/gui/recording.h"
#include "edo/gui/table_model_base.h"

namespace edo::gui {

class SessionsModel : public TableModelBase {
  Q_OBJECT
 public:
  enum Columns { kCommand, kHost, kPid, kRank, kGpus, kDuration, kExitCode, kSteps, kDropped, kColumnCount };
  explicit SessionsModel(QObject* parent = nullptr);
  void setRecording(RecordingPtr recording);

 protected:
  int rows() const override;
  QVariant cell(int row, int column, int role) const override;

 private:
  RecordingPtr recording_;
};

// "exit 0", "exit 3", "killed by signal 9 (exit 137)", "unknown".
QString describe_exit(const model::Session& session);

}  // namespace edo::gui
