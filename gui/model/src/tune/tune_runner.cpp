#include "edo/gui/tune/tune_runner.h"

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

#include <chrono>
#include <new>

#include "edo/db/profile_store.h"
#include "edo/db/tune_store.h"
#include "edo/db/weight_store.h"
#include "edo/gui/tune/tune_words.h"
#include "ui_thread.h"

namespace edo::gui {

struct TuneRunner::Job {
  QString path;
  tuner::TuneOptions options;
  std::atomic<bool> cancel{false};
  std::atomic<bool> abandoned{false};  // the runner is gone: deliver nothing
  QPointer<TuneRunner> owner;          // read on the owner's thread only
  std::chrono::steady_clock::time_point last_progress{};
};

TuneRunner::TuneRunner(QObject* parent) : QObject(parent) { qRegisterMetaType<TuneResultPtr>(); }

TuneRunner::~TuneRunner() {
  if (job_) {
    job_->abandoned = true;
    job_->cancel = true;
  }
}

void TuneRunner::cancel() {
  if (job_) job_->cancel = true;
}

void TuneRunner::start(const QString& path, const tuner::TuneOptions& options) {
  if (job_) return;
  auto job = std::make_shared<Job>();
  job->path = path;
  job->options = options;
  job->owner = this;
  job_ = job;
  auto post = ui_thread_poster(job);
  (void)QtConcurrent::run([job, post] {
    auto fail = [&](const QString& reason) {
      post([job, reason](TuneRunner* self) {
        self->job_.reset();
        Q_EMIT self->failed(reason);
      });
    };
    try {
      model::TuneResult result;
      {
        db::ProfileStore store(job->path.toStdString(), db::ProfileStore::Mode::kReadOnly);
        const model::Profile profile = store.load();
        const auto weights = db::load_weight_snapshots(store);
        result = tuner::tune(
            profile, weights, job->options,
            [&](const tuner::TuneProgress& p) {
              const auto now = std::chrono::steady_clock::now();
              if (p.done < p.total && now - job->last_progress < std::chrono::milliseconds(50)) return;
              job->last_progress = now;
              const QString what = QString::fromStdString(p.table) + QStringLiteral(": ") + QString::fromStdString(p.candidate);
              const qulonglong done = p.done, total = p.total;
              const double left = p.remaining_s;
              post([done, total, left, what](TuneRunner* self) { Q_EMIT self->progress(done, total, left, what); });
            },
            &job->cancel);
      }
      // Stored like `edo tune` stores it, so that `edo report` and `edo export` see it too.
      QString not_saved;
      try {
        db::ProfileStore store(job->path.toStdString(), db::ProfileStore::Mode::kReadWrite);
        db::save_tune_result(store, result);
      } catch (const std::exception& e) {
        not_saved = QStringLiteral("the result was not saved in the file: ") + QString::fromStdString(e.what());
      }
      auto shared = std::make_shared<const model::TuneResult>(std::move(result));
      post([shared, not_saved](TuneRunner* self) {
        self->job_.reset();
        Q_EMIT self->finished(shared, not_saved);
      });
    } catch (const tuner::TuneError& e) {
      fail(dashboard_error(e));
    } catch (const std::invalid_argument& e) {
      fail(dashboard_error(e));
    } catch (const db::DbError& e) {
      fail(QString::fromStdString(e.what()));
    } catch (const std::bad_alloc&) {
      fail(job->path + QStringLiteral(": not enough memory to tune this recording"));
    } catch (const std::exception& e) {
      fail(QStringLiteral("tuning failed: ") + QString::fromStdString(e.what()));
    }
  });
}

}  // namespace edo::gui
