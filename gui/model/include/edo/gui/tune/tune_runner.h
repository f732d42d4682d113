// Runs `edo tune` from the dashboard: tuner::tune() on a worker thread over the recording
// (loaded afresh from its file, weight snapshots included, as the command does), with
// progress, Cancel (the tuner stops after the candidate it is measuring and plans from what
// was measured), and the result saved in the file like `edo tune` saves it.
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

#include "edo/gui/tune/tune_models.h"
#include "edo/tuner/tuner.h"

namespace edo::gui {

class TuneRunner : public QObject {
  Q_OBJECT
 public:
  explicit TuneRunner(QObject* parent = nullptr);
  ~TuneRunner() override;

  void start(const QString& path, const tuner::TuneOptions& options);
  void cancel();  // the result still arrives (finished), made from what was measured
  bool busy() const { return job_ != nullptr; }

 Q_SIGNALS:
  // done/total candidates, seconds left (-1 unknown), what is being measured.
  void progress(qulonglong done, qulonglong total, double remaining_s, const QString& what);
  // saved: empty, or one line saying why the result could not be stored in the file.
  void finished(edo::gui::TuneResultPtr result, const QString& not_saved);
  void failed(const QString& reason);

 private:
  struct Job;
  std::shared_ptr<Job> job_;
};

}  // namespace edo::gui

Q_DECLARE_METATYPE(edo::gui::TuneResultPtr)
