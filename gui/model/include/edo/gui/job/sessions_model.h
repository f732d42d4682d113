// The traced processes of a recording (one row per session), each with its role in the job
// (model::job_view(): the root `edo record` started, a rank, a forked worker, another child).
#pragma once

#include <vector>

#include "edo/gui/recording/recording.h"
#include "edo/gui/table_model_base.h"
#include "edo/model/processes.h"

namespace edo::gui {

class SessionsModel : public TableModelBase {
  Q_OBJECT
 public:
  enum Columns { kRole, kCommand, kHost, kPid, kRank, kGpus, kDuration, kExitCode, kSteps, kDropped, kColumnCount };
  explicit SessionsModel(QObject* parent = nullptr);
  void setRecording(RecordingPtr recording);

 protected:
  int rows() const override;
  QVariant cell(int row, int column, int role) const override;

 private:
  RecordingPtr recording_;
  std::vector<model::Role> roles_;  // one per session
};

// "root", "rank 1", "forked worker", "child process".
QString describe_role(const model::Session& session, model::Role role);
// "exit 0", "exit 3", "killed by signal 9 (exit 137)"; without a recorded exit code, what is
// known: "forked worker, exit not observed" (the tracer of a forked worker ends with the
// process and nobody waits for it on edo's behalf), "exit not recorded" for the others.
QString describe_exit(const model::Session& session, model::Role role = model::Role::kRoot);
// "the root, 2 ranks, 3 forked workers" (as `edo report` counts them).
QString describe_roles(const model::JobView& job);

}  // namespace edo::gui
