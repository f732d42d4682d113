// Opens a recording off the UI thread, in stages (heaptrack's parser pattern): the outline
// first (sessions, memory timeline, table shapes, bytes and lookups: enough to paint the
// overview at once), then the statistics, with progress, then the TorchRec facts. Results
// arrive as signals on the thread that owns the loader; opening another file or destroying the
// loader abandons a load in progress (its results are never delivered).
#pragma once

#include <QObject>
#include <QString>

#include <memory>

#include "edo/gui/recording/recording.h"

namespace edo::gui {

class RecordingLoader : public QObject {
  Q_OBJECT
 public:
  explicit RecordingLoader(QObject* parent = nullptr);
  ~RecordingLoader() override;

  void open(const QString& path);
  void cancel();
  bool busy() const { return job_ != nullptr; }
  QString path() const { return path_; }

 Q_SIGNALS:
  void outlineReady(edo::gui::RecordingPtr recording);
  // fraction in [0, 1] of the statistics stage, and what it is doing.
  void progress(double fraction, const QString& what);
  void loaded(edo::gui::RecordingPtr recording);
  // After loaded: the recording's TorchRec facts are filled (recording.h; not when another
  // file was opened meanwhile).
  void torchrecFactsReady(edo::gui::RecordingPtr recording);
  // reason: one line naming the problem and the fix (from db::DbError).
  void failed(const QString& path, const QString& reason);

 private:
  struct Job;
  void deliver_outline(const std::shared_ptr<Job>& job, RecordingPtr rec);
  void deliver_progress(const std::shared_ptr<Job>& job, double fraction, const QString& what);
  void deliver_loaded(const std::shared_ptr<Job>& job, RecordingPtr rec);
  void deliver_torchrec_facts(const std::shared_ptr<Job>& job, RecordingPtr rec);
  void deliver_failure(const std::shared_ptr<Job>& job, const QString& reason);

  std::shared_ptr<Job> job_;
  std::shared_ptr<Job> facts_job_;  // a loaded file's worker still computing its TorchRec facts
  QString path_;
};

}  // namespace edo::gui

Q_DECLARE_METATYPE(edo::gui::RecordingPtr)
