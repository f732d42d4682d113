#include "edo/gui/recording/recording_loader.h"

#include "edo/db/tune_store.h"
#include "ui_thread.h"
#include "recording_torchrec_facts.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>
#include <chrono>
#include <new>

namespace edo::gui {

namespace {
struct Abandoned {};  // thrown from progress callbacks to stop a load nobody waits for
}  // namespace

struct RecordingLoader::Job {
  QString path;
  std::atomic<bool> abandoned{false};  // another file was opened, or the loader is gone
  QPointer<RecordingLoader> owner;  // read on the owner's thread only
  std::chrono::steady_clock::time_point last_progress{};
};

RecordingLoader::RecordingLoader(QObject* parent) : QObject(parent) {
  qRegisterMetaType<RecordingPtr>();
}

RecordingLoader::~RecordingLoader() { cancel(); }

void RecordingLoader::cancel() {
  for (auto* job : {&job_, &facts_job_}) {
    if (*job) (*job)->abandoned = true;
    job->reset();
  }
}

void RecordingLoader::open(const QString& path) {
  cancel();
  path_ = path;
  auto job = std::make_shared<Job>();
  job->path = path;
  job->owner = this;
  job_ = job;
  auto post = ui_thread_poster(job);
  (void)QtConcurrent::run([job, post] {
    try {
      db::ProfileStore store(job->path.toStdString(), db::ProfileStore::Mode::kReadOnly);
      // The latest tune run is small (candidates and a plan): it comes with the outline.
      std::optional<model::TuneResult> tune = db::load_latest_tune_result(store);
      RecordingPtr outline = make_outline(job->path, store.load_outline(), tune);
      if (job->abandoned) return;
      post([job, outline](RecordingLoader* self) { self->deliver_outline(job, outline); });

      // Progress at most every 30 ms: enough for a smooth bar without flooding the UI thread.
      auto report = [&](double fraction, const QString& what, bool force) {
        if (job->abandoned) throw Abandoned{};
        auto now = std::chrono::steady_clock::now();
        if (!force && now - job->last_progress < std::chrono::milliseconds(30)) return;
        job->last_progress = now;
        post([job, fraction, what](RecordingLoader* self) { self->deliver_progress(job, fraction, what); });
      };
      model::Profile profile = load_profile_for_dashboard(store, [&](size_t done, size_t total) {
        report(0.5 * static_cast<double>(done) / static_cast<double>(total),
               QStringLiteral("Reading statistics: table %1 of %2").arg(done).arg(total), done == total);
      });
      RecordingPtr full = make_recording(job->path, std::move(profile), [&](size_t done, size_t total) {
        report(0.5 + 0.5 * static_cast<double>(done) / static_cast<double>(total),
               QStringLiteral("Summarising: table %1 of %2").arg(done).arg(total), done == total);
      }, std::move(tune));
      if (job->abandoned) return;
      post([job, full](RecordingLoader* self) { self->deliver_loaded(job, full); });
      // Stage 3, with the statistics already shown: the TorchRec facts (their held-out replays
      // take longer than the statistics), abandoned when another file is opened.
      try {
        fill_torchrec_facts(*full, &store, [&](size_t, size_t) {
          if (job->abandoned) throw Abandoned{};
        });
      } catch (const std::exception& e) {  // the recording is shown: only the TorchRec export misses them
        full->torchrec_facts->fail(e.what());
      }
      post([job, full](RecordingLoader* self) { self->deliver_torchrec_facts(job, full); });
    } catch (const Abandoned&) {
    } catch (const db::DbError& e) {
      QString reason = QString::fromStdString(e.what());
      post([job, reason](RecordingLoader* self) { self->deliver_failure(job, reason); });
    } catch (const std::bad_alloc&) {
      QString reason = job->path + QStringLiteral(": not enough memory to open this recording; close other programs or use a machine with more memory");
      post([job, reason](RecordingLoader* self) { self->deliver_failure(job, reason); });
    } catch (const std::exception& e) {
      QString reason = job->path + QStringLiteral(": cannot be read (") + QString::fromStdString(e.what()) + QStringLiteral(")");
      post([job, reason](RecordingLoader* self) { self->deliver_failure(job, reason); });
    }
  });
}

void RecordingLoader::deliver_outline(const std::shared_ptr<Job>& job, RecordingPtr rec) {
  if (job != job_) return;
  Q_EMIT outlineReady(std::move(rec));
}

void RecordingLoader::deliver_progress(const std::shared_ptr<Job>& job, double fraction, const QString& what) {
  if (job != job_) return;
  Q_EMIT progress(fraction, what);
}

void RecordingLoader::deliver_loaded(const std::shared_ptr<Job>& job, RecordingPtr rec) {
  if (job != job_) return;
  facts_job_ = std::move(job_);  // its worker goes on with the TorchRec facts
  Q_EMIT loaded(std::move(rec));
}

void RecordingLoader::deliver_torchrec_facts(const std::shared_ptr<Job>& job, RecordingPtr rec) {
  if (job != facts_job_) return;
  facts_job_.reset();
  Q_EMIT torchrecFactsReady(std::move(rec));
}

void RecordingLoader::deliver_failure(const std::shared_ptr<Job>& job, const QString& reason) {
  if (job != job_) return;
  job_.reset();
  Q_EMIT failed(job->path, reason);
}

}  // namespace edo::gui
